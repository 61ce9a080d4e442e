import { setFlagsFromString } from 'node:v8';

/**
 * How far past what a full GC left live V8 lets the old generation grow before the next one, in
 * percent, in a process that runs a node (watch, the agent, a foreground run). V8's own factor
 * follows allocation speed: up to 4x while thousands of pods start, and the pages committed then
 * come back only as they empty (5,000 pods settled at over 500 MB of RSS for about 100 MB live);
 * at steady state it falls to about 1.1x, and each relist's list answers then start a full GC.
 * A fixed 1.5x, as Go's GOGC bounds the kubelet's heap, bounds both: measured in bench/scale-fake.
 */
export const NODE_HEAP_GROWING_PERCENT = 50;

const FLAG = '--heap-growing-percent';

let applied = false;

/**
 * Whether Node was started with its own heap growing factor: that one stands. Only the command
 * line can give one: Node refuses V8 flags such as this one in NODE_OPTIONS, before any script runs.
 */
function chosenByUser(execArgv: readonly string[]): boolean {
  return execArgv.some((arg) => arg === FLAG || arg.startsWith(`${FLAG}=`) || arg === '--heap_growing_percent' || arg.startsWith('--heap_growing_percent='));
}

/**
 * Sets this process's V8 heap growing factor to NODE_HEAP_GROWING_PERCENT, once, unless Node was
 * started with one. V8 reads the flag at each full GC, so it holds from the next one on.
 * Returns whether it was set now.
 */
export function boundHeapGrowth(opts: { execArgv?: readonly string[] } = {}): boolean {
  if (applied || chosenByUser(opts.execArgv ?? process.execArgv)) return false;
  applied = true;
  setFlagsFromString(`${FLAG}=${NODE_HEAP_GROWING_PERCENT}`);
  return true;
}
