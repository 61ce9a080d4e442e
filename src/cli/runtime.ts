import type { CallObserver, CriClient } from '../core/cri/client.js';
import { loadSettings, resolveEndpoints, type ResolvedEndpoints } from '../core/cri/endpoint.js';
import { parseDuration } from '../core/util/duration.js';
import { embeddedEndpoint, embeddedPaths } from '../core/embedded/paths.js';
import { embeddedContainerd } from '../core/embedded/probe.js';

export interface GlobalFlags {
  'runtime-endpoint'?: string;
  'image-endpoint'?: string;
  config?: string;
  'request-timeout'?: string;
  'pull-timeout'?: string;
}

/** Endpoint resolution from the global flags, the environment, the config file and the embedded runtime. */
export async function resolveFromFlags(flags: GlobalFlags): Promise<ResolvedEndpoints> {
  const settings = await loadSettings(flags.config);
  const explicit = flags['runtime-endpoint'] || process.env.CONTAINER_RUNTIME_ENDPOINT || settings.runtimeEndpoint;
  const paths = embeddedPaths();
  const embedded = explicit ? undefined : embeddedContainerd(paths);
  return resolveEndpoints({
    runtimeFlag: flags['runtime-endpoint'],
    imageFlag: flags['image-endpoint'],
    env: process.env,
    settings,
    embeddedEndpoint: embeddedEndpoint(paths),
    embeddedUp: embedded?.running ?? false,
    timeoutMs: flags['request-timeout'] ? parseDuration(flags['request-timeout'], '--request-timeout') : undefined,
    pullTimeoutMs: flags['pull-timeout'] ? parseDuration(flags['pull-timeout'], '--pull-timeout') : undefined,
  });
}

export async function connect(flags: GlobalFlags, observer?: CallObserver): Promise<{ client: CriClient; endpoints: ResolvedEndpoints }> {
  return clientFor(await resolveFromFlags(flags), observer);
}

/** A CRI client on resolved endpoints. */
export async function clientFor(
  endpoints: ResolvedEndpoints,
  observer?: CallObserver,
): Promise<{ client: CriClient; endpoints: ResolvedEndpoints }> {
  // gRPC and the CRI's definitions load here, when a command first talks to the runtime, not at start.
  const { CriClient } = await import('../core/cri/client.js');
  const client = new CriClient({
    runtimeEndpoint: endpoints.runtime.endpoint,
    imageEndpoint: endpoints.image.endpoint,
    timeoutMs: endpoints.timeoutMs,
    pullTimeoutMs: endpoints.pullTimeoutMs,
    observer,
  });
  return { client, endpoints };
}
