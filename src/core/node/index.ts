export { StandaloneNode, type NodeHooks, type NodeOptions, type AppliedPodRef } from './node.js';
export { AgentClient, AgentRequestError } from './client.js';
export { AppliedSource, splitApplied, appliedFileName } from './applied.js';
export { agentLogFile, agentSocket, appliedDir, nodeAgentLabel, DEFAULT_LOG_ROOT, DEFAULT_ROOT_DIR } from './paths.js';
export { startAgentInBackground } from './spawn.js';
export { agentProcess, stopAgent, systemdUnit, openrcScript } from './supervise.js';
export { waitForPods, podProgress, CANNOT_START, type WaitFor, type PodWaitResult } from './wait.js';
export { wireNode, type NodeWiring, type WiringOptions } from './wire.js';
