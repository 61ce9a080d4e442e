import type { IPod } from 'kubernetes-models/v1';
import type { PodActions, ProbeVerdicts } from '../../src/core/kuberuntime/actions.js';
import type { RuntimePodStatus } from '../../src/core/container/types.js';
import { container, instance, makePod, podStatus, sandbox } from './builders.js';

/** The parts of PodActions a case asserts, with names instead of indexes. */
export interface ActionSummary {
  killPod: boolean;
  createSandbox: boolean;
  attempt: number;
  init: string[];
  start: string[];
  kill: string[];
}

export function summary(a: PodActions): ActionSummary {
  return {
    killPod: a.killPod,
    createSandbox: a.createSandbox,
    attempt: a.attempt,
    init: a.initContainersToStart.map((c) => c.name),
    start: a.containersToStart.map((c) => c.name),
    kill: a.containersToKill.map((c) => `${c.name}:${c.reason}`),
  };
}

export interface PodActionCase {
  name: string;
  pod: IPod;
  status: (pod: IPod) => RuntimePodStatus;
  probes?: ProbeVerdicts;
  want: ActionSummary;
}

const none: ActionSummary = { killPod: false, createSandbox: false, attempt: 0, init: [], start: [], kill: [] };
const app = container('app');
const side = container('side', { command: ['sleep', '100'] });

/**
 * computePodActions table cases as in kuberuntime_manager_test: the core's
 * tests and plan's tests both run over these.
 */
export const podActionCases: PodActionCase[] = [
  {
    name: 'new pod: create the sandbox and start every container',
    pod: makePod({ containers: [app, side] }),
    status: (pod) => podStatus(pod, [], []),
    want: { ...none, killPod: true, createSandbox: true, start: ['app', 'side'] },
  },
  {
    name: 'steady pod: nothing to do',
    pod: makePod({ containers: [app, side] }),
    status: (pod) => podStatus(pod, [sandbox()], [instance(app), instance(side)]),
    want: none,
  },
  {
    name: 'sandbox not ready: kill the pod and recreate it with the next attempt',
    pod: makePod(),
    status: (pod) => podStatus(pod, [sandbox({ state: 'notready', attempt: 2 })], [instance(app, { state: 'exited', exitCode: 137 })]),
    want: { ...none, killPod: true, createSandbox: true, attempt: 3, start: ['app'] },
  },
  {
    name: 'sandbox without an IP (pod network): recreate it',
    pod: makePod(),
    status: (pod) => podStatus(pod, [sandbox({ ip: undefined })], [instance(app)]),
    want: { ...none, killPod: true, createSandbox: true, attempt: 1, start: ['app'] },
  },
  {
    name: 'hostNetwork changed: recreate the sandbox',
    pod: makePod({ hostNetwork: true }),
    status: (pod) => podStatus(pod, [sandbox()], [instance(app)]),
    want: { ...none, killPod: true, createSandbox: true, attempt: 1, start: ['app'] },
  },
  {
    name: 'restartPolicy Never, sandbox dead after the pod ran: no new sandbox',
    pod: makePod({ restartPolicy: 'Never' }),
    status: (pod) => podStatus(pod, [sandbox({ state: 'notready' })], [instance(app, { state: 'exited', exitCode: 1 })]),
    want: { ...none, attempt: 1 },
  },
  {
    name: 'restartPolicy OnFailure, new sandbox: skip containers that succeeded',
    pod: makePod({ restartPolicy: 'OnFailure', containers: [app, side] }),
    status: (pod) =>
      podStatus(
        pod,
        [sandbox({ state: 'notready' })],
        [instance(app, { state: 'exited', exitCode: 0 }), instance(side, { state: 'exited', exitCode: 2 })],
      ),
    want: { ...none, killPod: true, createSandbox: true, attempt: 1, start: ['side'] },
  },
  {
    name: 'Always: an exited container (code 0) is restarted',
    pod: makePod({ containers: [app, side] }),
    status: (pod) => podStatus(pod, [sandbox()], [instance(app, { state: 'exited', exitCode: 0 }), instance(side)]),
    want: { ...none, start: ['app'] },
  },
  {
    name: 'OnFailure: an exited container with code 1 is restarted',
    pod: makePod({ restartPolicy: 'OnFailure', containers: [app, side] }),
    status: (pod) => podStatus(pod, [sandbox()], [instance(app, { state: 'exited', exitCode: 1 }), instance(side)]),
    want: { ...none, start: ['app'] },
  },
  {
    name: 'OnFailure: an exited container with code 0 is left alone',
    pod: makePod({ restartPolicy: 'OnFailure', containers: [app, side] }),
    status: (pod) => podStatus(pod, [sandbox()], [instance(app, { state: 'exited', exitCode: 0 }), instance(side)]),
    want: none,
  },
  {
    name: 'Never: an exited container is not restarted',
    pod: makePod({ restartPolicy: 'Never', containers: [app, side] }),
    status: (pod) => podStatus(pod, [sandbox()], [instance(app, { state: 'exited', exitCode: 1 }), instance(side)]),
    want: none,
  },
  {
    name: 'every container finished and none restarts: kill the pod (stop the sandbox)',
    pod: makePod({ restartPolicy: 'Never' }),
    status: (pod) => podStatus(pod, [sandbox()], [instance(app, { state: 'exited', exitCode: 0 })]),
    want: { ...none, killPod: true },
  },
  {
    name: 'spec hash changed: kill and restart just that container',
    pod: makePod({ containers: [container('app', { command: ['sleep', '7200'] }), side] }),
    status: (pod) => podStatus(pod, [sandbox()], [instance(app), instance(side)]),
    want: { ...none, start: ['app'], kill: ['app:SpecChanged'] },
  },
  {
    name: 'liveness failed: kill and restart the container',
    pod: makePod({ containers: [app] }),
    status: (pod) => podStatus(pod, [sandbox()], [instance(app, { id: 'live-1' })]),
    probes: { livenessFailed: (id) => id === 'live-1', startupFailed: () => false },
    want: { ...none, start: ['app'], kill: ['app:Unhealthy'] },
  },
  {
    name: 'startup probe failed: kill and restart the container',
    pod: makePod({ containers: [app] }),
    status: (pod) => podStatus(pod, [sandbox()], [instance(app, { id: 'start-1' })]),
    probes: { livenessFailed: () => false, startupFailed: (id) => id === 'start-1' },
    want: { ...none, start: ['app'], kill: ['app:Unhealthy'] },
  },
  {
    name: 'liveness failed under restartPolicy Never: kill, no restart, and the pod is stopped',
    pod: makePod({ restartPolicy: 'Never', containers: [app] }),
    status: (pod) => podStatus(pod, [sandbox()], [instance(app, { id: 'live-never' })]),
    probes: { livenessFailed: (id) => id === 'live-never', startupFailed: () => false },
    want: { ...none, killPod: true, kill: ['app:Unhealthy'] },
  },
  {
    name: 'a sidecar whose liveness failed is killed and started again beside the running app',
    pod: makePod({ initContainers: [container('proxy', { restartPolicy: 'Always' })], containers: [app] }),
    status: (pod) =>
      podStatus(
        pod,
        [sandbox()],
        [instance(container('proxy', { restartPolicy: 'Always' }), { id: 'side-1', kind: 'sidecar' }), instance(app)],
      ),
    probes: { livenessFailed: (id) => id === 'side-1', startupFailed: () => false },
    want: { ...none, init: ['proxy'], kill: ['proxy:Unhealthy'] },
  },
  {
    name: 'container in unknown state is started again',
    pod: makePod(),
    status: (pod) => podStatus(pod, [sandbox()], [instance(app, { state: 'unknown' })]),
    want: { ...none, start: ['app'] },
  },
  {
    name: 'init containers: a new sandbox starts the first init container only',
    pod: makePod({ initContainers: [container('init1'), container('init2')] }),
    status: (pod) => podStatus(pod, [], []),
    want: { ...none, killPod: true, createSandbox: true, init: ['init1'] },
  },
  {
    name: 'init containers: after init1 succeeded, start init2',
    pod: makePod({ initContainers: [container('init1'), container('init2')] }),
    status: (pod) => podStatus(pod, [sandbox()], [instance(container('init1'), { state: 'exited', exitCode: 0, kind: 'init' })]),
    want: { ...none, init: ['init2'] },
  },
  {
    name: 'init containers: one still running, wait',
    pod: makePod({ initContainers: [container('init1'), container('init2')] }),
    status: (pod) => podStatus(pod, [sandbox()], [instance(container('init1'), { kind: 'init' })]),
    want: none,
  },
  {
    name: 'init containers: all succeeded, start the app containers',
    pod: makePod({ initContainers: [container('init1')] }),
    status: (pod) => podStatus(pod, [sandbox()], [instance(container('init1'), { state: 'exited', exitCode: 0, kind: 'init' })]),
    want: { ...none, start: ['app'] },
  },
  {
    name: 'init containers: a failed one is retried under Always',
    pod: makePod({ initContainers: [container('init1')] }),
    status: (pod) => podStatus(pod, [sandbox()], [instance(container('init1'), { state: 'exited', exitCode: 3, kind: 'init' })]),
    want: { ...none, init: ['init1'] },
  },
  {
    name: 'init containers: a failed one under Never kills the pod',
    pod: makePod({ restartPolicy: 'Never', initContainers: [container('init1')] }),
    status: (pod) => podStatus(pod, [sandbox()], [instance(container('init1'), { state: 'exited', exitCode: 3, kind: 'init' })]),
    want: { ...none, killPod: true },
  },
  {
    name: 'sidecar: counts as initialized once running; app containers start',
    pod: makePod({ initContainers: [container('proxy', { restartPolicy: 'Always' })] }),
    status: (pod) => podStatus(pod, [sandbox()], [instance(container('proxy', { restartPolicy: 'Always' }), { kind: 'sidecar' })]),
    want: { ...none, start: ['app'] },
  },
  {
    name: 'sidecar that exited is restarted alongside running app containers',
    pod: makePod({ initContainers: [container('proxy', { restartPolicy: 'Always' })] }),
    status: (pod) =>
      podStatus(
        pod,
        [sandbox()],
        [instance(container('proxy', { restartPolicy: 'Always' }), { kind: 'sidecar', state: 'exited', exitCode: 1 }), instance(app)],
      ),
    want: { ...none, init: ['proxy'] },
  },
];
