import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { ISecret } from 'kubernetes-models/v1';
import type { AuthConfigInput } from '../cri/types.js';

/** One registry entry of a docker config: `auths.KEY` of config.json, or `KEY` of a legacy .dockercfg. */
interface DockerConfigEntry {
  username?: string;
  password?: string;
  auth?: string;
  identitytoken?: string;
  registrytoken?: string;
}

export const DOCKER_CONFIG_JSON_TYPE = 'kubernetes.io/dockerconfigjson';
export const DOCKER_CONFIG_TYPE = 'kubernetes.io/dockercfg';
const DOCKER_CONFIG_JSON_KEY = '.dockerconfigjson';
const DOCKER_CONFIG_KEY = '.dockercfg';

/**
 * Docker Hub's key in docker configs (`docker login` writes https://index.docker.io/v1/): a lookup
 * key for credentials of images named without a registry host, never an address podctl dials.
 * Pulls go through the runtime, whose embedded configuration sends docker.io to the loopback registry.
 */
const DEFAULT_REGISTRY_HOST = 'index.docker.io';

/**
 * The entries of a docker config, either format: `{"auths": {...}}` (config.json,
 * .dockerconfigjson) or the bare map of a legacy .dockercfg. Throws on text that is not JSON.
 */
export function parseDockerConfig(text: string): Record<string, DockerConfigEntry> {
  const parsed = JSON.parse(text) as unknown;
  if (typeof parsed !== 'object' || parsed === null) return {};
  const auths = (parsed as { auths?: unknown }).auths;
  const map = typeof auths === 'object' && auths !== null ? auths : parsed;
  const out: Record<string, DockerConfigEntry> = {};
  for (const [key, value] of Object.entries(map as Record<string, unknown>)) {
    if (typeof value === 'object' && value !== null) out[key] = value as DockerConfigEntry;
  }
  return out;
}

/**
 * An entry's credentials as the CRI takes them: the pair from `auth` (base64 user:password) when
 * only that is given. No server address, as the kubelet sends none: the lookup chose the registry,
 * and containerd 1.6 cannot parse a bare host:port there.
 */
function toAuthConfig(entry: DockerConfigEntry): AuthConfigInput {
  let { username, password } = entry;
  if (entry.auth && username === undefined && password === undefined) {
    const decoded = Buffer.from(entry.auth, 'base64').toString('utf8');
    const i = decoded.indexOf(':');
    if (i > 0) {
      username = decoded.slice(0, i);
      password = decoded.slice(i + 1);
    }
  }
  return {
    ...(username ? { username } : {}),
    ...(password ? { password } : {}),
    ...(entry.auth ? { auth: entry.auth } : {}),
    ...(entry.identitytoken ? { identityToken: entry.identitytoken } : {}),
    ...(entry.registrytoken ? { registryToken: entry.registrytoken } : {}),
  };
}

/** A key as the kubelet indexes it: no scheme, and /v1/ or /v2/ count for the host alone. */
function normalizeKey(key: string): { host: string; path: string } | undefined {
  let url: URL;
  try {
    url = new URL(/^https?:\/\//.test(key) ? key : `https://${key}`);
  } catch {
    return undefined;
  }
  let path = url.pathname;
  if (path.startsWith('/v1/') || path.startsWith('/v2/')) path = path.slice(3);
  if (path === '/') path = '';
  return { host: url.host, path };
}

/** `*.example.com` matches `a.example.com` (one label per `*`), as the kubelet's URLsMatch does; ports must be equal. */
function hostMatches(pattern: string, host: string): boolean {
  const [pHost, pPort = ''] = splitPort(pattern);
  const [hHost, hPort = ''] = splitPort(host);
  if (pPort !== hPort) return false;
  const pParts = pHost.split('.');
  const hParts = hHost.split('.');
  if (pParts.length !== hParts.length) return false;
  return pParts.every((p, i) => globMatch(p, hParts[i]!));
}

function splitPort(host: string): [string, string?] {
  const m = /^(.*?)(?::(\d+))?$/.exec(host)!;
  return [m[1]!, m[2]];
}

function globMatch(pattern: string, text: string): boolean {
  const re = new RegExp(
    `^${pattern
      .replace(/[.+^${}()|[\]\\]/g, '\\$&')
      .replace(/\*/g, '[^.]*')
      .replace(/\?/g, '[^.]')}$`,
  );
  return re.test(text);
}

/**
 * The repository an image pulls from, fully qualified and without tag or digest
 * (`busybox:1.36` → `docker.io/library/busybox`), as the kubelet looks credentials up by it.
 */
export function imageRepository(image: string): string {
  let ref = image.split('@')[0]!;
  const lastSlash = ref.lastIndexOf('/');
  const colon = ref.lastIndexOf(':');
  if (colon > lastSlash) ref = ref.slice(0, colon);
  const first = ref.split('/')[0]!;
  const hasHost = ref.includes('/') && (first.includes('.') || first.includes(':') || first === 'localhost');
  if (!hasHost) ref = `docker.io/${ref.includes('/') ? ref : `library/${ref}`}`;
  return ref;
}

/** Whether the image comes from Docker Hub, whose credentials are kept under index.docker.io. */
function isDefaultRegistry(repo: string): boolean {
  const host = repo.split('/')[0];
  return host === 'docker.io' || host === DEFAULT_REGISTRY_HOST;
}

/**
 * The kubelet's DockerKeyring: registry credentials indexed by host (with `*` labels)
 * and optional path. A lookup returns every entry whose key matches the image's
 * repository, the most specific first, for the puller to try in turn.
 */
export class DockerKeyring {
  private readonly entries: { host: string; path: string; auth: AuthConfigInput }[] = [];

  add(config: Record<string, DockerConfigEntry>): this {
    for (const [key, entry] of Object.entries(config)) {
      const k = normalizeKey(key);
      if (!k) continue;
      this.entries.push({ ...k, auth: toAuthConfig(entry) });
    }
    // Longer keys first, so registry.example.com/team matches before registry.example.com.
    this.entries.sort((a, b) => `${b.host}${b.path}`.localeCompare(`${a.host}${a.path}`));
    return this;
  }

  get size(): number {
    return this.entries.length;
  }

  lookup(image: string): AuthConfigInput[] {
    const repo = imageRepository(image);
    const slash = repo.indexOf('/');
    const host = repo.slice(0, slash);
    const path = repo.slice(slash);
    const matched = this.entries.filter(
      (e) => hostMatches(e.host, host) && (e.path === '' || path === e.path || path.startsWith(`${e.path.replace(/\/$/, '')}/`)),
    );
    if (matched.length) return matched.map((e) => e.auth);
    if (isDefaultRegistry(repo)) return this.entries.filter((e) => e.host === DEFAULT_REGISTRY_HOST && e.path === '').map((e) => e.auth);
    return [];
  }
}

/**
 * The credentials of a pod's imagePullSecrets: kubernetes.io/dockerconfigjson
 * (`.dockerconfigjson`) and kubernetes.io/dockercfg (`.dockercfg`) Secrets, data
 * base64 as the API holds it. Other types, and unreadable data, give nothing.
 */
export function keyringFromSecrets(secrets: ISecret[]): DockerKeyring {
  const keyring = new DockerKeyring();
  for (const s of secrets) {
    const key = s.type === DOCKER_CONFIG_JSON_TYPE ? DOCKER_CONFIG_JSON_KEY : s.type === DOCKER_CONFIG_TYPE ? DOCKER_CONFIG_KEY : undefined;
    const data = key ? s.data?.[key] : undefined;
    if (!data) continue;
    try {
      keyring.add(parseDockerConfig(Buffer.from(data, 'base64').toString('utf8')));
    } catch {
      // The kubelet skips a pull secret it cannot parse and pulls with what else it has.
    }
  }
  return keyring;
}

/**
 * Where the kubelet looks for the node's own registry credentials, in order:
 * config.json in its root dir, the working dir, ~/.docker and /.docker, then the
 * legacy .dockercfg in its root dir, the working dir, ~ and /. The first file found wins.
 */
export function nodeDockerConfigPaths(rootDir: string | undefined, cwd = process.cwd(), home = homedir()): string[] {
  const dirs = [rootDir, cwd].filter((d): d is string => !!d);
  return [
    ...dirs.map((d) => join(d, 'config.json')),
    join(home, '.docker', 'config.json'),
    '/.docker/config.json',
    ...dirs.map((d) => join(d, '.dockercfg')),
    join(home, '.dockercfg'),
    '/.dockercfg',
  ];
}

/** The node's keyring from the first docker config found at those paths; read at each pull, so an edit applies at once. */
export function nodeKeyring(paths: string[], read: (path: string) => string = (p) => readFileSync(p, 'utf8')): DockerKeyring {
  for (const path of paths) {
    let text: string;
    try {
      text = read(path);
    } catch {
      continue;
    }
    try {
      return new DockerKeyring().add(parseDockerConfig(text));
    } catch {
      // An unreadable file is skipped, as the kubelet does, and the search goes on.
      continue;
    }
  }
  return new DockerKeyring();
}
