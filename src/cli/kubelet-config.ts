import { readFileSync } from 'node:fs';
import yaml from 'js-yaml';
import { PodctlError } from '../core/errors.js';
import { bytes } from '../core/util/quantity.js';

/**
 * The kubelet's config file (`--config` of the kubelet, `--kubelet-config` here): a
 * KubeletConfiguration document whose fields set the flags of the same meaning. As with the
 * kubelet, a flag given on the command line wins over the file.
 */
export const KUBELET_CONFIG_API_VERSION = 'kubelet.config.k8s.io/v1beta1';

type Kind = 'quantity' | 'count' | 'percent' | 'duration' | 'reserved' | 'string' | 'headers';

/** KubeletConfiguration field → the podctl flag it sets, and what its value must be. */
const FIELDS: Record<string, { flag: string; kind: Kind; min?: number }> = {
  containerLogMaxSize: { flag: 'container-log-max-size', kind: 'quantity' },
  containerLogMaxFiles: { flag: 'container-log-max-files', kind: 'count', min: 2 },
  containerLogMonitorInterval: { flag: 'container-log-monitor-interval', kind: 'duration' },
  imageGCHighThresholdPercent: { flag: 'image-gc-high-threshold', kind: 'percent' },
  imageGCLowThresholdPercent: { flag: 'image-gc-low-threshold', kind: 'percent' },
  imageMinimumGCAge: { flag: 'image-minimum-gc-age', kind: 'duration' },
  maxPods: { flag: 'max-pods', kind: 'count', min: 1 },
  systemReserved: { flag: 'system-reserved', kind: 'reserved' },
  kubeReserved: { flag: 'kube-reserved', kind: 'reserved' },
  fileCheckFrequency: { flag: 'file-check-frequency', kind: 'duration' },
  httpCheckFrequency: { flag: 'http-check-frequency', kind: 'duration' },
  staticPodURL: { flag: 'manifest-url', kind: 'string' },
  staticPodURLHeader: { flag: 'manifest-url-header', kind: 'headers' },
  runtimeRequestTimeout: { flag: 'request-timeout', kind: 'duration' },
  containerRuntimeEndpoint: { flag: 'runtime-endpoint', kind: 'string' },
  imageServiceEndpoint: { flag: 'image-endpoint', kind: 'string' },
};

/**
 * KubeletConfiguration fields that mean something to a kubelet in a cluster (API server,
 * TLS, cgroups, eviction…) and that podctl does not implement: accepted so that a real
 * kubelet's file loads, and named in a warning, never dropped silently.
 */
const NOT_IMPLEMENTED = new Set(
  (
    'address port readOnlyPort healthzPort healthzBindAddress enableServer authentication authorization tlsCertFile tlsPrivateKeyFile ' +
    'tlsCipherSuites tlsMinVersion rotateCertificates serverTLSBootstrap clusterDNS clusterDomain resolvConf cgroupDriver cgroupRoot ' +
    'cgroupsPerQOS enforceNodeAllocatable systemReservedCgroup kubeReservedCgroup evictionHard evictionSoft evictionSoftGracePeriod ' +
    'evictionPressureTransitionPeriod evictionMaxPodGracePeriod evictionMinimumReclaim featureGates failSwapOn memorySwap ' +
    'shutdownGracePeriod shutdownGracePeriodCriticalPods shutdownGracePeriodByPodPriority podPidsLimit cpuManagerPolicy ' +
    'cpuManagerPolicyOptions cpuManagerReconcilePeriod memoryManagerPolicy topologyManagerPolicy topologyManagerScope ' +
    'topologyManagerPolicyOptions reservedMemory reservedSystemCPUs logging serializeImagePulls maxParallelImagePulls registryPullQPS ' +
    'registryBurst eventRecordQPS eventBurst kubeAPIQPS kubeAPIBurst nodeStatusUpdateFrequency nodeStatusReportFrequency ' +
    'nodeStatusMaxImages nodeLeaseDurationSeconds streamingConnectionIdleTimeout volumeStatsAggPeriod volumePluginDir hairpinMode ' +
    'podCIDR podsPerCore protectKernelDefaults makeIPTablesUtilChains iptablesMasqueradeBit iptablesDropBit providerID ' +
    'cpuCFSQuota cpuCFSQuotaPeriod seccompDefault localStorageCapacityIsolation containerLogMaxWorkers imageMaximumGCAge ' +
    'staticPodPath syncFrequency enableDebuggingHandlers enableContentionProfiling enableProfilingHandler ' +
    'enableDebugFlagsHandler enableSystemLogHandler enableSystemLogQuery kernelMemcgNotification allowedUnsafeSysctls ' +
    'registerNode registerWithTaints kubeletCgroups systemCgroups oomScoreAdj showHiddenMetricsForVersion ' +
    'memoryThrottlingFactor singleProcessOOMKill tracing crashLoopBackOff userNamespaces ' +
    'mergeDefaultEvictionSettings failCgroupV1 imagePullCredentialsVerificationPolicy preloadedImagesVerificationAllowlist ' +
    'maxOpenFiles contentType'
  )
    .split(/\s+/)
    .filter((f) => !(f in FIELDS)),
);

export interface KubeletConfigFile {
  /** Flag name → value, as if given on the command line. */
  flags: Record<string, string | number | string[]>;
  /** Fields of a KubeletConfiguration that podctl accepts and does not implement. */
  notImplemented: string[];
  /** The file's field for each flag it sets, for messages. */
  fieldOf: Record<string, string>;
}

/** Reads and checks a KubeletConfiguration file; an error names the file and the field. */
export function loadKubeletConfig(path: string, read: (p: string) => string = (p) => readFileSync(p, 'utf8')): KubeletConfigFile {
  let text: string;
  try {
    text = read(path);
  } catch (err) {
    throw new PodctlError(`cannot read kubelet config file ${path}: ${(err as Error).message}`, { exitCode: 2 });
  }
  let doc: unknown;
  try {
    doc = yaml.load(text, { filename: path });
  } catch (err) {
    throw new PodctlError(`kubelet config file ${path} is not valid YAML: ${(err as Error).message.split('\n')[0]}`, { exitCode: 2 });
  }
  const fail = (field: string, expected: string, got?: unknown) =>
    new PodctlError(`${path}: ${field}: expected ${expected}${got === undefined ? '' : `, got ${JSON.stringify(got)}`}`, { exitCode: 2 });
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc))
    throw fail('(document)', `a KubeletConfiguration mapping (apiVersion: ${KUBELET_CONFIG_API_VERSION})`);
  const { apiVersion, kind, ...fields } = doc as Record<string, unknown>;
  if (apiVersion !== KUBELET_CONFIG_API_VERSION) throw fail('apiVersion', JSON.stringify(KUBELET_CONFIG_API_VERSION), apiVersion);
  if (kind !== 'KubeletConfiguration') throw fail('kind', '"KubeletConfiguration"', kind);
  const out: KubeletConfigFile = { flags: {}, notImplemented: [], fieldOf: {} };
  for (const [field, value] of Object.entries(fields)) {
    const known = FIELDS[field];
    if (!known) {
      if (NOT_IMPLEMENTED.has(field)) {
        out.notImplemented.push(field);
        continue;
      }
      throw new PodctlError(
        `${path}: ${field}: not a KubeletConfiguration field podctl knows; it reads ${Object.keys(FIELDS).join(', ')}`,
        { exitCode: 2 },
      );
    }
    out.flags[known.flag] = checked(field, known, value, fail);
    out.fieldOf[known.flag] = field;
  }
  return out;
}

function checked(
  field: string,
  spec: { kind: Kind; min?: number },
  value: unknown,
  fail: (field: string, expected: string, got?: unknown) => PodctlError,
): string | number | string[] {
  switch (spec.kind) {
    case 'count': {
      const min = spec.min ?? 0;
      if (!Number.isInteger(value) || (value as number) < min) throw fail(field, `a whole number of at least ${min}`, value);
      return value as number;
    }
    case 'percent':
      if (!Number.isInteger(value) || (value as number) < 0 || (value as number) > 100)
        throw fail(field, 'a whole number from 0 to 100', value);
      return value as number;
    case 'quantity':
      if ((typeof value !== 'string' && typeof value !== 'number') || (bytes(value) ?? -1) < 0)
        throw fail(field, 'a size such as 10Mi', value);
      return String(value);
    case 'duration': {
      const ms = goDurationMs(value);
      if (ms === undefined) throw fail(field, 'a duration such as 10s, 2m or 1m30s', value);
      return `${ms}ms`;
    }
    case 'reserved':
      if (
        typeof value !== 'object' ||
        value === null ||
        Array.isArray(value) ||
        !Object.values(value).every((v) => typeof v === 'string' || typeof v === 'number')
      ) {
        throw fail(field, 'a map of resource to quantity, such as {cpu: 100m, memory: 100Mi}', value);
      }
      return Object.entries(value as Record<string, string | number>)
        .map(([k, v]) => `${k}=${v}`)
        .join(',');
    case 'string':
      if (typeof value !== 'string' || value === '') throw fail(field, 'a non-empty string', value);
      return value;
    case 'headers':
      if (
        typeof value !== 'object' ||
        value === null ||
        Array.isArray(value) ||
        !Object.values(value).every((v) => Array.isArray(v) && v.every((x) => typeof x === 'string'))
      ) {
        throw fail(field, 'a map of header name to a list of values, such as {Authorization: ["Bearer t"]}', value);
      }
      return Object.entries(value as Record<string, string[]>).flatMap(([name, values]) => values.map((v) => `${name}: ${v}`));
  }
}

/** A Go duration as metav1.Duration writes it ("2m0s", "1h30m", "500ms", "10s"); a bare 0 too. */
export function goDurationMs(value: unknown): number | undefined {
  if (value === 0 || value === '0') return 0;
  if (typeof value !== 'string' || !/^(\d+(\.\d+)?(h|m|s|ms|us|µs|ns))+$/.test(value)) return undefined;
  const unit: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1000, ms: 1, us: 1e-3, µs: 1e-3, ns: 1e-6 };
  let ms = 0;
  for (const m of value.matchAll(/(\d+(?:\.\d+)?)(h|ms|m|s|us|µs|ns)/g)) ms += Number(m[1]) * unit[m[2]!]!;
  return Math.round(ms);
}

/**
 * Sets, from the file, every flag this command has that the command line did not give
 * (oclif marks those set from their default). Returns the file's fields this command has no
 * flag for, so that the caller says they are not used here.
 */
export function applyKubeletConfig(
  flags: Record<string, unknown>,
  metadata: { flags: Record<string, { setFromDefault?: boolean } | undefined> },
  commandFlags: ReadonlySet<string>,
  file: KubeletConfigFile,
): string[] {
  const unused: string[] = [];
  for (const [flag, value] of Object.entries(file.flags)) {
    if (!commandFlags.has(flag)) {
      unused.push(file.fieldOf[flag] ?? flag);
      continue;
    }
    const given = flags[flag] !== undefined && !metadata.flags[flag]?.setFromDefault;
    if (!given) flags[flag] = value;
  }
  return unused;
}
