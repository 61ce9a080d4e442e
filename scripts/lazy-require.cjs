'use strict';
// A module that is required only when first used: scripts/bundle.mjs rewrites
// @oclif/core's top-level `const x = require('…')` into `lazyRequire(() => require('…'))`,
// so a start evaluates only the parts of oclif (and of its dependencies, and of
// Node's own modules) that it touches, as Babel's lazy CommonJS transform does.
// `esModule` is what the module's __esModule is, known at build time, so that
// __importDefault and __importStar need not load it to ask.
module.exports = function lazyRequire(load, esModule) {
  let loaded = false;
  let mod;
  const real = () => {
    if (!loaded) {
      mod = load();
      loaded = true;
    }
    return mod;
  };
  // A bound function: callable and constructible (some modules are a function
  // or a class), and without the non-configurable `prototype` a Proxy would
  // then have to report.
  const target = function () {}.bind(null);
  const proxy = new Proxy(target, {
    get: (_, key) => (key === '__esModule' ? esModule : Reflect.get(real(), key)),
    set: (_, key, value) => Reflect.set(real(), key, value),
    has: (_, key) => key in real(),
    ownKeys: () => Reflect.ownKeys(real()),
    getOwnPropertyDescriptor: (_, key) => {
      const d = Reflect.getOwnPropertyDescriptor(real(), key);
      return d && { ...d, configurable: true };
    },
    defineProperty: (_, key, d) => Reflect.defineProperty(real(), key, d),
    deleteProperty: (_, key) => Reflect.deleteProperty(real(), key),
    getPrototypeOf: () => Reflect.getPrototypeOf(Object(real())),
    apply: (_, self, args) => Reflect.apply(real(), self, args),
    construct: (_, args, newTarget) => Reflect.construct(real(), args, newTarget === proxy ? real() : newTarget),
  });
  return proxy;
};
