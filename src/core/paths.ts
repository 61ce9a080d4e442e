import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

let cachedRoot: string | undefined;

/** The package's own directory (where proto/ and scripts/ live), from src/ or dist/. */
export function packageRoot(): string {
  if (cachedRoot) return cachedRoot;
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'proto', 'runtime', 'v1', 'api.proto'))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error('podctl: cannot find proto/runtime/v1/api.proto above ' + fileURLToPath(import.meta.url));
    dir = parent;
  }
  cachedRoot = dir;
  return dir;
}

export const criProtoFile = (): string => join(packageRoot(), 'proto', 'runtime', 'v1', 'api.proto');
