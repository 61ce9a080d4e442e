// Generates TypeScript types for the hand-written CRI proto with
// @grpc/proto-loader's generator, then adds the .js extensions that Node's
// ESM resolution needs to the generated relative imports.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const out = join(root, 'src/core/cri/generated');
rmSync(out, { recursive: true, force: true });
execFileSync(
  process.execPath,
  [
    join(root, 'node_modules/@grpc/proto-loader/build/bin/proto-loader-gen-types.js'),
    '--longs=Number',
    '--enums=String',
    '--defaults',
    '--oneofs',
    '--grpcLib=@grpc/grpc-js',
    '-I',
    join(root, 'proto'),
    '-O',
    out,
    'runtime/v1/api.proto',
  ],
  { stdio: 'inherit' },
);

function walk(dir) {
  for (const name of readdirSync(dir)) {
    const file = join(dir, name);
    if (statSync(file).isDirectory()) walk(file);
    else if (file.endsWith('.ts')) {
      const text = readFileSync(file, 'utf8').replace(/(from '\.{1,2}\/[^']+?)(?<!\.js)'/g, "$1.js'");
      writeFileSync(file, text);
    }
  }
}
walk(out);
