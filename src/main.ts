// The CLI's entry, which bin/run.js imports once the build has bundled it into dist/cli.
import { execute } from '@oclif/core';

await execute({ dir: import.meta.url });
