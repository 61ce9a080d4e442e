import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PodctlError } from '../errors.js';
import { ADMIN_USER, type KubeCredentials } from './certs.js';

/** Where the agent records the URL its kube API listens on, under `<root-dir>/kubeapi`, at each start. */
export const ENDPOINT_FILE = 'endpoint.json';

type Named = { name: string } & Record<string, unknown>;

/** A v1 Config for this node's API: cluster and context `name` (podctl), user `<name>-admin`, namespace default. */
export function kubeconfigFor(
  creds: Pick<KubeCredentials, 'caCert' | 'clientCert' | 'clientKey' | 'paths'>,
  server: string,
  opts: { name?: string; embed?: boolean } = {},
): Record<string, unknown> {
  const name = opts.name ?? 'podctl';
  const user = name === 'podctl' ? ADMIN_USER : `${name}-admin`;
  const embed = opts.embed ?? true;
  const b64 = (pem: string): string => Buffer.from(pem).toString('base64');
  return {
    apiVersion: 'v1',
    kind: 'Config',
    preferences: {},
    clusters: [
      {
        name,
        cluster: {
          server,
          ...(embed ? { 'certificate-authority-data': b64(creds.caCert) } : { 'certificate-authority': creds.paths.caCert }),
        },
      },
    ],
    users: [
      {
        name: user,
        user: embed
          ? { 'client-certificate-data': b64(creds.clientCert), 'client-key-data': b64(creds.clientKey) }
          : { 'client-certificate': creds.paths.clientCert, 'client-key': creds.paths.clientKey },
      },
    ],
    contexts: [{ name, context: { cluster: name, user, namespace: 'default' } }],
    'current-context': name,
  };
}

/**
 * `existing` (a parsed kubeconfig; null or undefined for an empty or absent file) with the clusters, users and
 * contexts of `ours` added, or put in place of the entries of the same name. Every other entry and field stays as
 * it was; current-context becomes ours only where none was set. Throws, naming the field, on a shape that is no
 * kubeconfig, so that the caller writes nothing.
 */
export function mergeKubeconfig(existing: unknown, ours: Record<string, unknown>): Record<string, unknown> {
  if (existing !== null && existing !== undefined && (typeof existing !== 'object' || Array.isArray(existing)))
    throw new PodctlError('the kubeconfig is not a mapping (expected a v1 Config)');
  const base: Record<string, unknown> = existing
    ? { ...(existing as Record<string, unknown>) }
    : { apiVersion: 'v1', kind: 'Config', preferences: {} };
  for (const field of ['clusters', 'users', 'contexts'] as const) {
    const list = namedList(base[field], field);
    for (const entry of namedList(ours[field], field)) {
      const i = list.findIndex((e) => e.name === entry.name);
      if (i >= 0) list[i] = entry;
      else list.push(entry);
    }
    base[field] = list;
  }
  if (typeof base['current-context'] !== 'string' || base['current-context'] === '') base['current-context'] = ours['current-context'];
  return base;
}

/** Whether a kubeconfig already has a context of this name (what `--merge` reports: added or updated). */
export function hasContext(config: unknown, name: string): boolean {
  const contexts = (config as { contexts?: unknown } | null | undefined)?.contexts;
  return Array.isArray(contexts) && contexts.some((c) => (c as { name?: unknown } | null)?.name === name);
}

/** The URL the agent recorded for its kube API under `dir` (`<root-dir>/kubeapi`). */
export function readKubeEndpoint(dir: string): string {
  const path = join(dir, ENDPOINT_FILE);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT')
      throw new PodctlError(`no kube API endpoint recorded under ${dir}: start the agent (podctl agent run) first`);
    throw new PodctlError(`${path}: cannot be read (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
  }
  let url: unknown;
  try {
    url = (JSON.parse(text) as { url?: unknown } | null)?.url;
  } catch {
    throw new PodctlError(`${path}: not JSON (expected {"url":"https://127.0.0.1:6443"})`);
  }
  if (typeof url !== 'string' || !/^https:\/\/\S+$/.test(url)) throw new PodctlError(`${path}: field url: expected an https:// URL`);
  return url;
}

function namedList(value: unknown, field: string): Named[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw new PodctlError(`the kubeconfig's ${field} is not a list`);
  return value.map((e, i) => {
    if (!e || typeof e !== 'object' || typeof (e as { name?: unknown }).name !== 'string')
      throw new PodctlError(`the kubeconfig's ${field}[${i}] has no name`);
    return e as Named;
  });
}
