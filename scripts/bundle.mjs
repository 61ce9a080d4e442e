// Bundles the CLI with esbuild into dist/cli: the entry (main.js), the command
// index oclif reads (commands.js) and the not-found hook, with each command and
// what only it uses in chunks of their own, imported when that command runs.
// Resolving and reading hundreds of package files at every start is what made
// a start slow; one bundle with lazily loaded chunks is read in a few files.
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

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
// net and dgram) for its PowerShell helpers: oclif gets is-wsl itself, and the rest of
// wsl-utils when it asks for PowerShell (on Windows only).
const wslUtilsDir = dirname(createRequire(join(root, 'node_modules/@oclif/core/lib/util/os.js')).resolve('wsl-utils'));
const wslOnly = {
  name: 'wsl-only',
  setup(b) {
    b.onResolve({ filter: /^wsl-utils$/ }, (args) => (/@oclif[\\/]core[\\/]lib[\\/]util[\\/]os\.js$/.test(args.importer) ? { path: 'wsl-utils', namespace: 'wsl-only' } : undefined));
    b.onLoad({ filter: /.*/, namespace: 'wsl-only' }, () => ({
      contents: "export { default as isWsl } from 'is-wsl';\nexport const powerShellPath = async () => (await import('wsl-utils')).powerShellPath();\n",
      resolveDir: wslUtilsDir,
      loader: 'js',
    }));
  },
};
// @oclif/core is CommonJS, which esbuild cannot tree-shake: loading it evaluated all of
// it, with minimatch, tinyglobby, ejs, semver, child_process, perf_hooks… at every start.
// Its top-level requires become lazy (scripts/lazy-require.cjs): a module is evaluated
// when something first uses it. tsc writes them one a line, as matched here.
const lazyHelper = join(root, 'scripts/lazy-require.cjs');
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
const outdir = join(root, 'dist/cli');
rmSync(outdir, { recursive: true, force: true });
const result = await build({
  absWorkingDir: root,
  entryPoints: { main: 'src/main.ts', commands: 'src/commands.ts', help: 'src/help.ts', 'command-not-found': 'src/hooks/command-not-found.ts' },
  outdir,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  chunkNames: 'chunks/[name]-[hash]',
  // oclif requires typescript only to run a CLI from its .ts sources, which this one never does.
  external: ['typescript'],
  // CommonJS packages in an ESM bundle still call require() and read __dirname.
  banner: {
    js: [
      "import { createRequire as __podctlCreateRequire } from 'node:module';",
      "import { dirname as __podctlDirname } from 'node:path';",
      "import { fileURLToPath as __podctlFileURLToPath } from 'node:url';",
      'const require = __podctlCreateRequire(import.meta.url);',
      'const __filename = __podctlFileURLToPath(import.meta.url);',
      'const __dirname = __podctlDirname(__filename);',
    ].join('\n'),
  },
  legalComments: 'none',
  sourcemap: 'linked',
  logLevel: 'warning',
  metafile: true,
  plugins: [pluginFiles, lazyOclif, wslOnly],
});
// What each chunk holds and imports: a unit test checks from it what a command loads.
writeFileSync(join(outdir, 'meta.json'), JSON.stringify(result.metafile));
console.log('bundle: dist/cli');
