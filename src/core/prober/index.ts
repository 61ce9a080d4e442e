export { runHandler, resolvePort, type Handler, type HandlerContext, type HandlerOutcome, type HandlerResult } from './handlers.js';
export { ProberManager, type ProbeResultUpdate, type ProberManagerOptions } from './manager.js';
export { PROBE_DEFAULTS, ProbeWorker, probeOf, runtimeId, type ProbeResult, type ProbeType } from './worker.js';
