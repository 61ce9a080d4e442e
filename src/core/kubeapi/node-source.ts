import type { NodeInfo } from '../admission.js';
import type { AgentHealth } from '../node/agent.js';
import { uidOf } from './feed.js';
import { nodeObject, readNodeFacts, type NodeFacts } from './node-object.js';

/**
 * The Node this agent serves, as the kubelet would post its status now: the host's facts read once,
 * Ready from the agent's health (the sync loop and the runtime), each condition's transition time
 * kept from when it last changed.
 */
export function nodeSource(o: {
  info: NodeInfo;
  rootDir: string;
  maxPods: number;
  runtime: { runtimeName: string; runtimeVersion: string };
  podctlVersion: string;
  health: () => AgentHealth;
  now?: () => number;
  facts?: NodeFacts;
}): () => Record<string, unknown> {
  const now = o.now ?? Date.now;
  const started = now();
  const facts = o.facts ?? readNodeFacts({ rootDir: o.rootDir, maxPods: o.maxPods });
  let ready = { ok: true, since: started, message: '' };
  return () => {
    const h = o.health();
    const failed = h.checks.filter((c) => !c.ok).map((c) => `${c.name}: ${c.message}`);
    if (h.ok !== ready.ok) ready = { ok: h.ok, since: now(), message: failed.join('; ') };
    const node = nodeObject({
      name: o.info.name,
      labels: o.info.labels,
      uid: uidOf(`node/${o.info.name}/${facts.machineID}`),
      creationTimestamp: started,
      heartbeat: now(),
      capacity: facts.capacity,
      allocatable: o.info.allocatable,
      conditions: {
        ready: { ok: ready.ok, since: ready.since, ...(ready.ok ? {} : { reason: 'KubeletNotReady', message: ready.message }) },
        memoryPressure: { pressure: false, since: started },
        diskPressure: { pressure: false, since: started },
        pidPressure: { pressure: false, since: started },
      },
      addresses: { InternalIP: facts.internalIP, Hostname: facts.hostname },
      nodeInfo: {
        kernelVersion: facts.kernelVersion,
        osImage: facts.osImage,
        containerRuntimeVersion: `${o.runtime.runtimeName}://${o.runtime.runtimeVersion}`,
        kubeletVersion: `v${o.podctlVersion}-podctl`,
        architecture: facts.architecture,
        operatingSystem: facts.operatingSystem,
        machineID: facts.machineID,
        systemUUID: facts.systemUUID,
        bootID: facts.bootID,
      },
    });
    return node as unknown as Record<string, unknown>;
  };
}
