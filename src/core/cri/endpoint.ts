import { existsSync, readFileSync } from 'node:fs';
import { PodctlError } from '../errors.js';
import { parseDuration } from '../util/duration.js';

export const DEFAULT_CONFIG_FILE = '/etc/podctl/config.yaml';
export const STANDARD_ENDPOINTS = ['unix:///run/containerd/containerd.sock', 'unix:///run/crio/crio.sock'];
export const DEFAULT_TIMEOUT_MS = 30_000;
export const DEFAULT_PULL_TIMEOUT_MS = 120_000;

/** What the user can set in the config file (keys as crictl spells them). */
export interface PodctlSettings {
  runtimeEndpoint?: string;
  imageEndpoint?: string;
  timeoutMs?: number;
  pullTimeoutMs?: number;
  debug?: boolean;
}

export type EndpointSource = 'flag' | 'env' | 'config' | 'embedded' | 'standard' | 'default';

export interface ResolvedEndpoint {
  endpoint: string;
  source: EndpointSource;
}

export interface ResolvedEndpoints {
  runtime: ResolvedEndpoint;
  image: ResolvedEndpoint;
  timeoutMs: number;
  pullTimeoutMs: number;
}

export interface ResolveInput {
  runtimeFlag?: string;
  imageFlag?: string;
  env: NodeJS.ProcessEnv;
  settings: PodctlSettings;
  /** unix:// endpoint of the embedded runtime; used when it is up. */
  embeddedEndpoint: string;
  embeddedUp: boolean;
  /** Whether a unix socket path exists (injected for tests). */
  socketExists?: (path: string) => boolean;
  timeoutMs?: number;
  pullTimeoutMs?: number;
}

/** Accepts `unix:///path`, `/path` and `unix:/path`, returns `unix:///path`. */
export function normalizeEndpoint(raw: string, what = 'endpoint'): string {
  const value = raw.trim();
  if (value.startsWith('unix://')) {
    const path = value.slice('unix://'.length);
    if (!path.startsWith('/')) throw badEndpoint(raw, what);
    return `unix://${path}`;
  }
  if (value.startsWith('unix:/')) return `unix://${value.slice('unix:'.length)}`;
  if (value.startsWith('/')) return `unix://${value}`;
  throw badEndpoint(raw, what);
}

function badEndpoint(raw: string, what: string): PodctlError {
  return new PodctlError(`invalid ${what} "${raw}": expected a unix socket such as unix:///run/containerd/containerd.sock`, {
    exitCode: 2,
  });
}

export function socketPath(endpoint: string): string {
  return normalizeEndpoint(endpoint).slice('unix://'.length);
}

/**
 * First match wins: flag, environment, config file, the embedded runtime when
 * it is up, the standard sockets that exist; else the embedded socket, so the
 * error that follows tells the user to start it.
 */
export function resolveEndpoints(input: ResolveInput): ResolvedEndpoints {
  const exists = input.socketExists ?? existsSync;
  const pick = (flag: string | undefined, envVar: string | undefined, setting: string | undefined): ResolvedEndpoint => {
    if (flag) return { endpoint: normalizeEndpoint(flag, '--runtime-endpoint'), source: 'flag' };
    if (envVar) return { endpoint: normalizeEndpoint(envVar, 'CONTAINER_RUNTIME_ENDPOINT'), source: 'env' };
    if (setting) return { endpoint: normalizeEndpoint(setting, 'runtime-endpoint in the config file'), source: 'config' };
    if (input.embeddedUp) return { endpoint: input.embeddedEndpoint, source: 'embedded' };
    for (const candidate of STANDARD_ENDPOINTS) {
      if (exists(socketPath(candidate))) return { endpoint: candidate, source: 'standard' };
    }
    return { endpoint: input.embeddedEndpoint, source: 'default' };
  };
  const runtime = pick(input.runtimeFlag, input.env.CONTAINER_RUNTIME_ENDPOINT, input.settings.runtimeEndpoint);
  // The image service follows the runtime unless told otherwise, as crictl does.
  let image: ResolvedEndpoint = runtime;
  if (input.imageFlag) image = { endpoint: normalizeEndpoint(input.imageFlag, '--image-endpoint'), source: 'flag' };
  else if (input.env.IMAGE_SERVICE_ENDPOINT)
    image = { endpoint: normalizeEndpoint(input.env.IMAGE_SERVICE_ENDPOINT, 'IMAGE_SERVICE_ENDPOINT'), source: 'env' };
  else if (input.settings.imageEndpoint)
    image = { endpoint: normalizeEndpoint(input.settings.imageEndpoint, 'image-endpoint in the config file'), source: 'config' };
  return {
    runtime,
    image,
    timeoutMs: input.timeoutMs ?? input.settings.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    pullTimeoutMs: input.pullTimeoutMs ?? input.settings.pullTimeoutMs ?? DEFAULT_PULL_TIMEOUT_MS,
  };
}

const SETTING_KEYS: Record<string, keyof PodctlSettings> = {
  'runtime-endpoint': 'runtimeEndpoint',
  'image-endpoint': 'imageEndpoint',
  timeout: 'timeoutMs',
  'pull-timeout': 'pullTimeoutMs',
  debug: 'debug',
};

/**
 * Reads the podctl config file. A missing default file is fine; a missing
 * file named explicitly, bad YAML or an unknown key is an error naming the
 * file and the key.
 */
export async function loadSettings(
  file: string | undefined,
  read: (path: string) => string = (p) => readFileSync(p, 'utf8'),
): Promise<PodctlSettings> {
  const path = file ?? DEFAULT_CONFIG_FILE;
  let text: string;
  try {
    text = read(path);
  } catch (err) {
    if (file === undefined && (err as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw new PodctlError(`cannot read config file ${path}: ${(err as Error).message}`, { exitCode: 2 });
  }
  // The YAML parser loads only when a config file exists: most starts have none.
  const { default: yaml } = await import('js-yaml');
  let doc: unknown;
  try {
    doc = yaml.load(text, { filename: path });
  } catch (err) {
    throw new PodctlError(`config file ${path} is not valid YAML: ${(err as Error).message.split('\n')[0]}`, { exitCode: 2 });
  }
  if (doc === undefined || doc === null) return {};
  if (typeof doc !== 'object' || Array.isArray(doc)) {
    throw new PodctlError(`config file ${path}: expected a mapping of settings (${Object.keys(SETTING_KEYS).join(', ')})`, {
      exitCode: 2,
    });
  }
  const settings: PodctlSettings = {};
  for (const [key, value] of Object.entries(doc as Record<string, unknown>)) {
    const field = SETTING_KEYS[key];
    if (!field) {
      throw new PodctlError(`config file ${path}: unknown setting "${key}"; expected one of ${Object.keys(SETTING_KEYS).join(', ')}`, {
        exitCode: 2,
      });
    }
    if (field === 'debug') {
      if (typeof value !== 'boolean') throw settingType(path, key, 'true or false');
      settings.debug = value;
    } else if (field === 'timeoutMs' || field === 'pullTimeoutMs') {
      settings[field] = parseDuration(value, `${path}: ${key}`);
    } else {
      if (typeof value !== 'string') throw settingType(path, key, 'a unix socket endpoint string');
      settings[field] = value;
    }
  }
  return settings;
}

function settingType(path: string, key: string, expected: string): PodctlError {
  return new PodctlError(`config file ${path}: setting "${key}" must be ${expected}`, { exitCode: 2 });
}
