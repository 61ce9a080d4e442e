import type { IPod } from 'kubernetes-models/v1';
import type { NodeInfo } from '../admission.js';
import type { Clock } from '../clock.js';
import type { ImageService, RuntimeService } from '../cri/client.js';
import type { HousekeepingResult, KubeletOptions } from '../kubelet.js';
import type { Metrics } from '../metrics.js';
import type { PodLifecycleEvent } from '../pleg/generic.js';
import type { PlegKind } from '../pleg/select.js';
import type { Tracer } from '../trace.js';

/** What the node says as it runs (the commands print these; the agent's log is their output). */
export interface NodeHooks {
  onPlegEvent?(e: PodLifecycleEvent): void;
  onRuntimeState?(up: boolean, detail?: string): void;
  onHousekeeping?(r: HousekeepingResult): void;
  onError?(err: unknown): void;
  /** A manifest that cannot be read or is invalid (one message naming the file). */
  onSourceError?(message: string): void;
  /** A pod a source gives that another pod's namespace/name or UID already holds: ignored; `why` says which. */
  onConflict?(source: string, pod: IPod, owner: string, why: string): void;
  onPlegFallback?(reason: string): void;
  /** What the API socket says of its clients: a watcher closed for not reading its events. */
  onApiLog?(message: string): void;
}

export interface NodeOptions {
  runtime: RuntimeService;
  images: ImageService;
  clock: Clock;
  /** State dir: applied manifests, per-pod files, the API socket. */
  rootDir: string;
  logRoot: string;
  nodeName: string;
  hostIP?: string;
  runtimeName?: string;
  allowPrivileged?: boolean;
  /** The CRI runtime handler of pods without spec.runtimeClassName. */
  runtimeHandler?: string;
  /** This node for the kubelet's admission of every pod a source adds (labels, allocatable). */
  admission?: NodeInfo;
  pleg?: PlegKind;
  relistPeriodMs?: number;
  /** watch PATH: a manifests file or directory the node follows too. */
  manifestPath?: string;
  fileCheckMs?: number;
  manifestUrl?: string;
  manifestUrlHeaders?: Record<string, string>;
  /** --manifest-url-max-size: a larger body is refused, the last good pods kept. */
  manifestUrlMaxBytes?: number;
  httpCheckMs?: number;
  appliedResyncMs?: number;
  /** Serve the API on <root-dir>/podctl.sock (default true). */
  serve?: boolean;
  /** Released when the node stops (the state dir's lock). */
  lock?: { release(): void };
  /** Said by GET /v1/agent: where this node's output goes. */
  logFile?: string;
  metrics?: Metrics;
  trace?: Tracer;
  hooks?: NodeHooks;
  /** Log rotation, image GC and container GC (the kubelet's flags). */
  hygiene?: Pick<KubeletOptions, 'containerLogs' | 'imageGC' | 'containerGC'>;
  /** Loop and worker periods (unit tests). */
  syncTickMs?: number;
  housekeepingPeriodMs?: number;
  backOffPeriodMs?: number;
}
