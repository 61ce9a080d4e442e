// Bundles the CLI with esbuild into dist/cli: the entry (main.cjs), the command
// index oclif reads (commands.js) and the not-found hook, with each command and
// what only it uses in chunks of their own, imported when that command runs.
// Resolving and reading hundreds of package files at every start is what made
// a start slow; one bundle with lazily loaded chunks is read in a few files.
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, transform } from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
// @oclif/plugin-autocomplete's package exports only its (empty) index; its command
// classes, which src/commands.ts lists, are bundled from where its files are.
const autocompleteLib = dirname(createRequire(import.meta.url).resolve('@oclif/plugin-autocomplete'));
const pluginFiles = {
  name: 'plugin-files',
  setup(b) {
    b.onResolve({ filter: /^@oclif\/plugin-autocomplete\/lib\// }, (args) => ({ path: join(autocompleteLib, args.path.slice('@oclif/plugin-autocomplete/lib/'.length)) }));
  },
};
// oclif asks wsl-utils for isWsl at every start, and wsl-utils imports child_process (with
// net and dgram) for its PowerShell helpers: oclif gets is-wsl's answer from src/cli/wsl.ts
// (is-wsl's ES module interop copied all of process and fs: a few ms), and the rest of
// wsl-utils when it asks for PowerShell (on Windows only).
const wslFile = join(root, 'src/cli/wsl.ts');
const wslUtilsDir = dirname(createRequire(join(root, 'node_modules/@oclif/core/lib/util/os.js')).resolve('wsl-utils'));
const wslOnly = {
  name: 'wsl-only',
  setup(b) {
    b.onResolve({ filter: /^wsl-utils$/ }, (args) => (/@oclif[\\/]core[\\/]lib[\\/]util[\\/]os\.js$/.test(args.importer) ? { path: 'wsl-utils', namespace: 'wsl-only' } : undefined));
    b.onLoad({ filter: /.*/, namespace: 'wsl-only' }, () => ({
      contents: `export { isWsl } from ${JSON.stringify(wslFile)};\nexport const powerShellPath = async () => (await import('wsl-utils')).powerShellPath();\n`,
      resolveDir: wslUtilsDir,
      loader: 'js',
    }));
  },
};
// oclif's logger makes a `debug` instance at every start, and the debug package loads tty (with
// net), os and supports-color to colour what it would print: about 3 ms. oclif only calls its
// instances. Without DEBUG in the environment they print nothing: oclif gets a no-op, and with
// it the real package, required from node_modules.
const oclifDebug = {
  name: 'oclif-debug',
  setup(b) {
    const fromOclif = createRequire(join(root, 'node_modules/@oclif/core/lib/logger.js'));
    if (fromOclif.resolve('debug') !== createRequire(join(root, 'dist/cli/chunks/x.js')).resolve('debug')) throw new Error('oclif-debug: debug resolves elsewhere from dist/cli');
    b.onResolve({ filter: /^debug$/ }, (args) => {
      if (args.namespace === 'oclif-debug') return { path: 'debug', external: true };
      return /[\\/]node_modules[\\/]@oclif[\\/]core[\\/]/.test(args.importer) ? { path: 'debug', namespace: 'oclif-debug' } : undefined;
    });
    b.onLoad({ filter: /.*/, namespace: 'oclif-debug' }, () => ({
      contents: "const off = Object.assign(() => {}, { enabled: false });\nmodule.exports = (namespace) => (process.env.DEBUG ? require('debug')(namespace) : off);\n",
      loader: 'js',
    }));
  },
};
// @oclif/core is CommonJS, which esbuild cannot tree-shake: loading it evaluated all of
// it, with minimatch, tinyglobby, ejs, semver, child_process, perf_hooks… at every start.
// Its top-level requires become lazy (scripts/lazy-require.cjs): a module is evaluated
// when something first uses it. tsc writes them one a line, as matched here.
const lazyHelper = join(root, 'scripts/lazy-require.cjs');
const stdioModule = JSON.stringify(join(root, 'src/cli/stdio.ts'));
/** [oclif file, its text, the text it is replaced with]: each must be found (the build throws). */
const stdioReplacements = [
  // Its terminal widths (80 off a terminal), computed when first read rather than as it loads.
  [
    /[\\/]lib[\\/]screen\.js$/,
    'exports.stdtermwidth = columns || termwidth(process.stdout);\nexports.errtermwidth = columns || termwidth(process.stderr);',
    `const __podctlStdio = require(${stdioModule});\nconst __podctlWidths = [];\nconst __podctlWidth = (fd) => (__podctlWidths[fd] ??= columns || (__podctlStdio.isTerminal(fd) ? termwidth(fd === 1 ? process.stdout : process.stderr) : 80));\nObject.defineProperty(exports, 'stdtermwidth', { get: () => __podctlWidth(1) });\nObject.defineProperty(exports, 'errtermwidth', { get: () => __podctlWidth(2) });`,
  ],
  // Its handler of a closed stdout: src/cli/stdio.ts gives it to the stream when the stream is made.
  [/[\\/]lib[\\/]command\.js$/, "process.stdout.on('error', (err) => {\n    if (err && err.code === 'EPIPE')\n        return;\n    throw err;\n});", ''],
  [/[\\/]lib[\\/]ux[\\/]index\.js$/, 'const ACTION_TYPE = (Boolean(process.stderr.isTTY) &&', `const ACTION_TYPE = (require(${stdioModule}).isTerminal(2) &&`],
  // The spinner's copies of the streams' write functions, taken when first used.
  [
    /[\\/]lib[\\/]ux[\\/]action[\\/]base\.js$/,
    '    stdmockOrigs = {\n        stderr: process.stderr.write,\n        stdout: process.stdout.write,\n    };',
    '    #origs;\n    get stdmockOrigs() {\n        return (this.#origs ??= { stderr: process.stderr.write, stdout: process.stdout.write });\n    }\n    set stdmockOrigs(value) {\n        this.#origs = value;\n    }',
  ],
  // At exit, a stream never made has nothing to flush.
  [/[\\/]lib[\\/]flush\.js$/, 'async function _flush() {\n', `async function _flush() {\n    if (!require(${stdioModule}).stdioMade(1))\n        return;\n`],
  // Whether to colour (help): supports-color asks tty.isatty, which loads net, even when FORCE_COLOR
  // decides (src/cli/start.ts sets 0 off a terminal); for 0 and false it answers no, as here.
  [
    /[\\/]lib[\\/]ux[\\/]supports-color\.js$/,
    'function supportsColor() {\n',
    "function supportsColor() {\n    if (process.env.FORCE_COLOR === '0' || process.env.FORCE_COLOR === 'false')\n        return false;\n",
  ],
  // ux.stdout and ux.stderr (this.log, this.logToStderr, help) wrote with console.log and console.error.
  [
    /[\\/]lib[\\/]ux[\\/]write\.js$/,
    'const node_util_1 = require("node:util");\nconst stdout = (str, ...args) => {',
    `const node_util_1 = require("node:util");\nconst __podctlStdio = require(${stdioModule});\nconst console = { log: (...a) => __podctlStdio.writeStdout(\`\${(0, node_util_1.format)(...a)}\\n\`), error: (...a) => __podctlStdio.writeStderr(\`\${(0, node_util_1.format)(...a)}\\n\`) };\nconst stdout = (str, ...args) => {`,
  ],
];
// ansis (oclif's colours) asks process.stdout whether it is a terminal as it loads, even when
// FORCE_COLOR decides: it asks src/cli/stdio.ts, which makes no stream for the answer.
const ansisStdio = {
  name: 'ansis-stdio',
  setup(b) {
    b.onLoad({ filter: /[\\/]node_modules[\\/]ansis[\\/]index\.js$/ }, (args) => {
      const text = readFileSync(args.path, 'utf8');
      const ask = '!!s.stdout?.isTTY';
      if (text.split(ask).length !== 2) throw new Error(`${args.path}: no longer asks process.stdout.isTTY once as expected; look again at ansis-stdio`);
      return { contents: text.replace(ask, `require(${stdioModule}).isTerminal(1)`), loader: 'js' };
    });
  },
};
const REQUIRE_LINE = /^(const|var) (\w+) = (?:(__importDefault|__importStar)\()?require\((["'])([^"']+)\4\)\)?;$|^exports\.(\w+) = __importStar\(require\((["'])([^"']+)\7\)\);$/;
const lazyOclif = {
  name: 'lazy-oclif',
  setup(b) {
    b.onLoad({ filter: /[\\/]node_modules[\\/]@oclif[\\/]core[\\/]lib[\\/].*\.js$/ }, (args) => {
      const req = createRequire(args.path);
      // Whether a module sets __esModule, which the helpers ask at once: asked here, at build time.
      const esModule = (spec) => {
        try {
          return req(spec)?.__esModule === true;
        } catch {
          return undefined;
        }
      };
      let text = readFileSync(args.path, 'utf8');
      if (/@oclif[\\/]core[\\/]lib[\\/]config[\\/]plugin\.js$/.test(args.path)) {
        // oclif sorts a plugin's commands by id with localeCompare, whose first call builds ICU's
        // collator: 10 to 15 ms of every start. podctl's ids are lowercase ASCII, in the same
        // order by code unit (a unit test checks).
        const sort = '.sort((a, b) => a.id.localeCompare(b.id));';
        if (!text.includes(sort)) throw new Error(`${args.path}: no longer sorts commands as expected; look again at this replacement`);
        text = text.replace(sort, '.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));');
      }
      if (/@oclif[\\/]core[\\/]lib[\\/]util[\\/]fs\.js$/.test(args.path)) {
        // oclif reads its manifest (and looks for a theme file) with fs/promises: each read is some four
        // thread-pool round trips, which left a start idle for milliseconds, and loading fs/promises
        // one more. These are small files read once, before anything else can run: read at once.
        const read = "const contents = await (0, promises_1.readFile)(path, 'utf8');";
        if (!text.includes(read)) throw new Error(`${args.path}: no longer reads JSON as expected; look again at this replacement`);
        text = text.replace(read, "const contents = (0, node_fs_1.readFileSync)(path, 'utf8');");
      }
      // Node makes process.stdout and process.stderr on first use: for a pipe, net and stream with
      // some twenty internal modules, 2 to 4 ms of a command that prints a line. oclif asked for
      // both as it loaded; it now asks when it needs them, and writes its lines with
      // src/cli/stdio.ts (at once, or through the streams once anything made them).
      for (const [file, old, replacement] of stdioReplacements) {
        if (!file.test(args.path)) continue;
        if (!text.includes(old)) throw new Error(`${args.path}: no longer reads as expected (${old.split('\n')[0]}); look again at the stdio replacements`);
        text = text.replace(old, replacement);
      }
      const lines = text.split('\n');
      for (let i = 0; i < lines.length; i++) {
        const m = REQUIRE_LINE.exec(lines[i]);
        if (!m) continue;
        const spec = m[5] ?? m[8];
        const esm = esModule(spec);
        if (esm === undefined) continue;
        const lazy = `__podctlLazy(() => require(${JSON.stringify(spec)}), ${esm})`;
        lines[i] = m[6] ? `exports.${m[6]} = __importStar(${lazy});` : `${m[1]} ${m[2]} = ${m[3] ? `${m[3]}(${lazy})` : lazy};`;
      }
      // On the first line, after "use strict" (which must stay the first statement), so that lines keep their numbers.
      lines[0] += `const __podctlLazy = require(${JSON.stringify(lazyHelper)});`;
      return { contents: lines.join('\n'), loader: 'js' };
    });
  },
};
// @kubernetes-models/validate loads every format of ajv-formats-draft2019 (with uri-js, the IANA
// scheme lists and an SMTP address grammar), is-cidr, and ajv-i18n's 20 locales: a third of what
// `validate` compiled at start, none of it used by the Kubernetes schemas, which name only the
// formats checked below. Those formats are still there, required from node_modules the first time
// one is checked; of ajv-i18n, English is the one locale its error messages use.
const validateDist = dirname(createRequire(join(root, 'node_modules/kubernetes-models/package.json')).resolve('@kubernetes-models/validate'));
const lazyFormats = {
  name: 'lazy-formats',
  setup(b) {
    const importer = /@kubernetes-models[\\/]validate[\\/]dist[\\/](formats|validate)\.mjs$/;
    const fromFormats = createRequire(join(validateDist, 'formats.mjs'));
    const fromChunks = createRequire(join(root, 'dist/cli/chunks/x.js'));
    // At run time the chunks require from dist/cli/chunks: it must find the same files.
    for (const spec of ['ajv-formats-draft2019/formats/index.js', 'is-cidr']) {
      if (fromFormats.resolve(spec) !== fromChunks.resolve(spec)) throw new Error(`lazy-formats: ${spec} resolves elsewhere from dist/cli; bundle it again`);
    }
    const validateText = readFileSync(join(validateDist, 'validate.mjs'), 'utf8');
    const locales = new Set([...validateText.matchAll(/localize\.(\w+)/g)].map((m) => m[1]));
    if (locales.size !== 1 || !locales.has('en')) throw new Error(`lazy-formats: validate.mjs uses ajv-i18n locales ${[...locales]}; only en is bundled`);
    b.onResolve({ filter: /^(ajv-formats-draft2019\/formats\/index\.js|is-cidr|ajv-i18n)$/ }, (args) => {
      // The lazy require()s below stay require()s, run from node_modules when first called.
      if (args.namespace === 'lazy-formats' && args.kind === 'require-call') return { path: args.path, external: true };
      return importer.test(args.importer) ? { path: args.path, namespace: 'lazy-formats', pluginData: { resolveDir: dirname(args.importer) } } : undefined;
    });
    b.onLoad({ filter: /.*/, namespace: 'lazy-formats' }, (args) => {
      const resolveDir = args.pluginData.resolveDir;
      if (args.path === 'ajv-i18n') return { contents: "export { default as en } from 'ajv-i18n/localize/en/index.js';\nimport en from 'ajv-i18n/localize/en/index.js';\nexport default { en };\n", resolveDir, loader: 'js' };
      if (args.path === 'is-cidr') return { contents: "let isCidr;\nexport default (value) => (isCidr ??= require('is-cidr'))(value);\n", resolveDir, loader: 'js' };
      const draft = fromFormats('ajv-formats-draft2019/formats/index.js');
      const entries = Object.entries(draft).map(([name, f]) => {
        const key = JSON.stringify(name);
        if (typeof f === 'function') return `  ${key}: (value) => load()[${key}](value),`;
        // A regular expression costs nothing to build: the same one, from the package at build time.
        if (f instanceof RegExp) return `  ${key}: new RegExp(${JSON.stringify(f.source)}, ${JSON.stringify(f.flags)}),`;
        throw new Error(`lazy-formats: draft2019 format ${name} is neither a function nor a RegExp`);
      });
      return { contents: `let formats;\nconst load = () => (formats ??= require('ajv-formats-draft2019/formats/index.js'));\nexport default {\n${entries.join('\n')}\n};\n`, resolveDir, loader: 'js' };
    });
  },
};
// Packages oclif requires only on paths a podctl start never takes (command discovery by glob,
// rc-file config, plugin version checks, its own spinner): left out of the bundle, so no start
// reads and compiles them, and required from node_modules on the day a path does need one.
// The lazy requires above make that safe. A unit test checks none of them loads for the common commands.
const OCLIF_ON_DEMAND = ['minimatch', 'picomatch', 'fdir', 'tinyglobby', 'lilconfig', 'cli-spinners', 'semver'];
const onDemand = {
  name: 'on-demand',
  setup(b) {
    const fromOclif = createRequire(join(root, 'node_modules/@oclif/core/package.json'));
    const fromChunks = createRequire(join(root, 'dist/cli/chunks/x.js'));
    for (const spec of OCLIF_ON_DEMAND) {
      if (fromOclif.resolve(spec) !== fromChunks.resolve(spec)) throw new Error(`on-demand: ${spec} resolves elsewhere from dist/cli`);
    }
    const names = new Set(OCLIF_ON_DEMAND);
    b.onResolve({ filter: /^[^./]/ }, (args) => {
      const name = args.path.startsWith('@') ? args.path.split('/').slice(0, 2).join('/') : args.path.split('/')[0];
      if (!names.has(name) || args.kind !== 'require-call' || !/[\\/]node_modules[\\/]@oclif[\\/]core[\\/]/.test(args.importer)) return undefined;
      return { path: args.path, external: true };
    });
  },
};
// string-width v4 with a fast path for printable ASCII (scripts/string-width-ascii.cjs), for every
// package that resolves it to the root's node_modules (oclif's help, wrap-ansi, widest-line, cli-table3).
const stringWidthFile = join(root, 'scripts/string-width-ascii.cjs');
const stringWidthV4 = createRequire(join(root, 'package.json')).resolve('string-width');
const asciiWidth = {
  name: 'ascii-width',
  setup(b) {
    b.onResolve({ filter: /^string-width$/ }, (args) => {
      if (args.importer === stringWidthFile) return undefined;
      const resolved = createRequire(args.importer).resolve('string-width');
      return resolved === stringWidthV4 ? { path: stringWidthFile } : undefined;
    });
  },
};
// wrap-ansi returns text without escape codes as it wrapped it (scripts/wrap-ansi-plain.cjs).
const plainWrapAnsi = createRequire(import.meta.url)('./wrap-ansi-plain.cjs');
const wrapAnsiFile = createRequire(join(root, 'node_modules/@oclif/core/lib/help/formatter.js')).resolve('wrap-ansi');
const plainWrap = {
  name: 'plain-wrap',
  setup(b) {
    b.onLoad({ filter: /[\\/]node_modules[\\/]wrap-ansi[\\/]index\.js$/ }, (args) => {
      // Only oclif's: another version's source is another function.
      if (args.path !== wrapAnsiFile) return undefined;
      return { contents: plainWrapAnsi(readFileSync(args.path, 'utf8')), loader: 'js' };
    });
  },
};
// protobufjs takes long.js when it can require it, and long.js compiles a WebAssembly module as it
// loads (a millisecond or two of every command that reads the runtime). Every podctl decoder converts
// 64-bit integers to numbers (longs: Number, and the summary decoders by LongBits), so without it
// protobufjs reads them as numbers at once, the same values, and allocates no Long per timestamp.
const noLong = {
  name: 'no-long',
  setup(b) {
    b.onResolve({ filter: /^long$/ }, (args) => {
      if (!/[\\/]node_modules[\\/]protobufjs[\\/]/.test(args.importer)) return undefined;
      return { path: 'long', namespace: 'no-long' };
    });
    // protobufjs takes a module without isLong as no Long at all.
    b.onLoad({ filter: /.*/, namespace: 'no-long' }, () => ({ contents: 'module.exports = null;\n', loader: 'js' }));
  },
};
// What of oclif a podctl command run by src/cli/direct.ts never evaluates: everything but its Command and
// parser (and what they evaluate, below): Config and plugin loading, main and execute, help and its
// templates (ejs), ux, errors and their colours and wrapping. oclif's index and Command require them
// (lazily, above), so esbuild put them in the chunks every command loads: some 250 KB of code and code
// cache read at every start. A require of one from the rest of oclif now goes through the chunk
// oclif-deferred.cjs, which holds them and is loaded when one is first used (an error, --help, --version,
// a topic, a mistyped command: anything oclif's execute runs).
const oclifLib = join(root, 'node_modules/@oclif/core/lib');
const OCLIF_KEPT = new Set([
  'index.js', 'command.js', 'parser/index.js', 'parser/parse.js', 'parser/validate.js', 'flags.js', 'args.js', 'cache.js',
  'logger.js', 'help/util.js', 'config/util.js', 'util/util.js', 'util/aggregate-flags.js', 'util/ids.js', 'flush.js', 'settings.js', 'symbols.js',
]);
const OCLIF_DEFERRED = readdirSync(oclifLib, { recursive: true })
  .map((f) => f.split(sep).join('/'))
  .filter((f) => f.endsWith('.js') && !f.startsWith('interfaces/') && !OCLIF_KEPT.has(f))
  .map((f) => join(oclifLib, f));
for (const f of OCLIF_KEPT) if (!existsSync(join(oclifLib, f))) throw new Error(`oclif-deferred: ${f} is gone; look again at OCLIF_KEPT`);
// The packages oclif requires for what is deferred (help, errors, ux).
const deferredPackages = ['ansis', 'wrap-ansi', 'indent-string', 'ejs', 'clean-stack', 'wordwrap', 'get-package-type', 'ansi-escapes', 'widest-line', 'supports-color'].map((spec) =>
  createRequire(join(oclifLib, 'index.js')).resolve(spec),
);
const deferredFiles = new Set([...OCLIF_DEFERRED, ...deferredPackages]);
const DEFERRED_CHUNK = 'chunks/oclif-deferred';
const deferredKey = (file) => file.slice(root.length + 1).split(sep).join('/');
const oclifDeferred = {
  name: 'oclif-deferred',
  setup(b) {
    b.onResolve({ filter: /^podctl:oclif-deferred$/ }, () => ({ path: 'oclif-deferred', namespace: 'oclif-deferred' }));
    b.onLoad({ filter: /.*/, namespace: 'oclif-deferred' }, () => ({
      contents: `export default {\n${[...deferredFiles].map((f) => `  ${JSON.stringify(deferredKey(f))}: () => require(${JSON.stringify(f)}),`).join('\n')}\n};\n`,
      resolveDir: root,
      loader: 'js',
    }));
    b.onResolve({ filter: /.*/ }, (args) => {
      if (args.kind !== 'require-call' || args.namespace !== 'file' || !args.importer.startsWith(oclifLib + sep) || deferredFiles.has(args.importer)) return undefined;
      let file;
      try {
        file = createRequire(args.importer).resolve(args.path);
      } catch {
        return undefined;
      }
      return deferredFiles.has(file) ? { path: `podctl-deferred:${deferredKey(file)}`, external: true } : undefined;
    });
  },
};
const outdir = join(root, 'dist/cli');
rmSync(outdir, { recursive: true, force: true });
const result = await build({
  absWorkingDir: root,
  entryPoints: { cli: 'src/main.ts', commands: 'src/commands.ts', help: 'src/help.ts', 'command-not-found': 'src/hooks/command-not-found.ts', [DEFERRED_CHUNK]: 'podctl:oclif-deferred' },
  outdir,
  // CommonJS files (converted below), so that src/cli/start.ts loads them with V8's code cache.
  outExtension: { '.js': '.cjs' },
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  chunkNames: 'chunks/[name]-[hash]',
  // oclif requires typescript only to run a CLI from its .ts sources, which this one never does.
  external: ['typescript'],
  legalComments: 'none',
  // No comments and no indentation: less to read, and to keep in memory as the functions' source.
  minifyWhitespace: true,
  logLevel: 'warning',
  metafile: true,
  write: false,
  plugins: [pluginFiles, lazyOclif, ansisStdio, wslOnly, oclifDebug, lazyFormats, onDemand, asciiWidth, plainWrap, noLong, oclifDeferred],
});
// esbuild splits only ES modules; Node 20 caches the compilation of none. Each file becomes the
// same module in CommonJS: its imports of other chunks are require()s, an import() a require()
// when it is called (a script compiled with a code cache has no import() of its own on Node 20:
// oclif's import() of an ES module plugin or hook, which podctl has none of, would fail), and
// import.meta.url this file's URL.
mkdirSync(join(outdir, 'chunks'), { recursive: true });
// Node's crypto module loads some twenty internal modules: a few ms of every command that talks to
// the agent, which holds it only for a hash it seldom computes (a root dir's agent label). In the
// chunks, an ES import of it (only ever read as import_node_crypto.name, which the build checks) is
// required when first read.
const LAZY_CRYPTO = /var (import_node_crypto\d*)=require\("node:crypto"\);/g;
const lazyBuiltin = 'var __podctlLazyBuiltin=(id)=>{let m;return new Proxy({},{get:(_,key)=>(m??=require(id))[key]})};';
function lazyCrypto(path, code) {
  const names = [...code.matchAll(LAZY_CRYPTO)].map((m) => m[1]);
  if (names.length === 0) return code;
  for (const name of names) {
    const uses = [...code.matchAll(new RegExp(`\\b${name}\\b(.)`, 'g'))].map((m) => m[1]);
    // The declaration's "=", then only property reads.
    if (uses.filter((c) => c !== '.').length !== 1) throw new Error(`${path}: ${name} is used other than as ${name}.name; look again at lazy crypto`);
  }
  // The helper just before the first of them (not first in the file, which may start with a directive).
  let first = true;
  return code.replace(LAZY_CRYPTO, (_, name) => `${first ? ((first = false), lazyBuiltin) : ''}var ${name}=__podctlLazyBuiltin("node:crypto");`);
}
const deferredChunk = join(outdir, `${DEFERRED_CHUNK}.cjs`);
for (const out of result.outputFiles) {
  // A deferred module (oclif-deferred above), from the chunk that holds them, loaded when first asked for.
  let rel = relative(dirname(out.path), deferredChunk).split(sep).join('/');
  if (!rel.startsWith('.')) rel = `./${rel}`;
  const text = out.text.replace(/\b__require\d*\("podctl-deferred:([^"]+)"\)/g, (_, key) => `require(${JSON.stringify(rel)}).default[${JSON.stringify(key)}]()`);
  if (text.includes('podctl-deferred:')) throw new Error(`${out.path}: a deferred oclif module is required other than as expected; look again at oclif-deferred`);
  const cjs = await transform(text, {
    format: 'cjs',
    loader: 'js',
    platform: 'node',
    target: 'node20',
    minifyWhitespace: true,
    supported: { 'dynamic-import': false },
    // import.meta.url made when first read: node:url's pathToFileURL at a chunk's load was 0.2 ms of every command that asks the agent.
    define: { 'import.meta.url': '__podctlImportMeta.url' },
    banner: out.text.includes('import.meta.url') ? "var __podctlImportMeta = { get url() { return require('node:url').pathToFileURL(__filename).href; } };" : '',
  });
  // V8 keeps a source of ASCII only in one byte a character, and reads and compiles it faster:
  // esbuild escapes non-ASCII text in strings, not in regular expressions or comments.
  if (/\\[\u0080-\uffff]/.test(cjs.code)) throw new Error(`${out.path}: a non-ASCII character after a backslash, which \\u cannot replace`);
  writeFileSync(out.path, lazyCrypto(out.path, cjs.code).replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`));
}
// The entry bin/run.js requires (main.cjs): the loader, which loads the CLI (cli.cjs) and its chunks with their code caches.
await build({
  absWorkingDir: root,
  entryPoints: { main: 'src/cli/start.ts' },
  outdir,
  outExtension: { '.js': '.cjs' },
  bundle: true,
  format: 'cjs',
  platform: 'node',
  target: 'node20',
  legalComments: 'none',
  logLevel: 'warning',
});
// What each chunk holds and imports: a unit test checks from it what a command loads.
writeFileSync(join(outdir, 'meta.json'), JSON.stringify(result.metafile));
// Packs (src/cli/code-cache.ts): each file a start or an import() loads first (a root) with the files it
// loads at once, read as one file with one code cache. A command loads twenty-odd chunks, most of a few
// KB: each read on its own cost about 0.1 ms (two files opened and read, a cache checked). cli.cjs's
// pack holds all it loads; another root's, the files of up to PACK_SMALL bytes it loads that cli.cjs
// does not (loaded already), so that a large chunk is never read twice. A file may be in several packs:
// the first pack loaded that holds it gives its function.
const PACK_SMALL = 32 * 1024;
const outputs = result.metafile.outputs;
const staticClosure = (start) => {
  const seen = new Set([start]);
  const queue = [start];
  while (queue.length) {
    for (const imp of outputs[queue.shift()].imports) {
      if (imp.kind === 'import-statement' && outputs[imp.path] && !seen.has(imp.path)) {
        seen.add(imp.path);
        queue.push(imp.path);
      }
    }
  }
  return seen;
};
const cliOutput = Object.keys(outputs).find((o) => outputs[o].entryPoint === 'src/main.ts');
const atStart = staticClosure(cliOutput);
const roots = new Set(Object.keys(outputs).filter((o) => outputs[o].entryPoint !== undefined));
for (const o of Object.values(outputs)) for (const imp of o.imports) if (imp.kind === 'dynamic-import' && outputs[imp.path]) roots.add(imp.path);
mkdirSync(join(outdir, 'packs'));
const packs = {};
const wrapper = (file) => `function (exports, require, module, __filename, __dirname) {${readFileSync(join(root, file), 'utf8')}\n}`;
for (const r of [...roots].sort()) {
  const files = [...staticClosure(r)].filter((f) => f === r || (r === cliOutput ? true : !atStart.has(f) && outputs[f].bytes <= PACK_SMALL));
  if (files.length < 2) continue;
  const rel = (f) => relative(outdir, join(root, f)).split(sep).join('/');
  const pack = `packs/${rel(r).replaceAll('/', '_').replace(/\.cjs$/, '')}.pack.js`;
  writeFileSync(join(outdir, pack), `({\n${files.map((f) => `${JSON.stringify(rel(f))}: ${wrapper(f)}`).join(',\n')}\n})`);
  packs[rel(r)] = pack;
}
writeFileSync(join(outdir, 'packs.json'), `${JSON.stringify({ packs })}\n`);
console.log('bundle: dist/cli');
