#!/usr/bin/env node
// oclif's launcher. Its execute comes from the bundle (src/main.ts), so that the launcher, the command
// index and the help class share one copy of oclif.
import { execute } from '../dist/cli/main.js';

await execute({ dir: import.meta.url });
