import { dump } from 'js-yaml';
import { Bundle, BundleOutputError, specContainer } from '../core/bundle/index.js';
import { newerFirst } from '../core/container/types.js';
import type { CriClient } from '../core/cri/client.js';
import { errorMessage, PodctlError } from '../core/errors.js';
import { readLogFileTail } from '../core/logs/index.js';
import { eventsFromRuntime, fetchPodEvents, podTimeline, type DescribedEvent } from '../core/podview/describe.js';
import { findRuntimePod, type PodView } from '../core/podview/index.js';
import { redactEnv, secretEnvPredicate } from '../core/redact.js';
import { podMeta } from '../core/util/pod-key.js';
import { expandInfo } from './render.js';

const json = (v: unknown) => `${JSON.stringify(v, null, 2)}\n`;

/** The archive's default name: POD-bundle-TIME.tar.gz. */
export function bundleOutput(name: string, output: string | undefined): string {
  const stamp = new Date().toISOString().replace(/[-:]/g, '').replace(/\..*/, '');
  return output ?? `${name}-bundle-${stamp}.tar.gz`;
}

/**
 * What `podctl bundle` archives about a pod: its manifest and status, events and timeline, the
 * runtime's verbose inspect of each sandbox and container instance (Secret values redacted), the
 * logs' tails and the versions. What could not be read is noted in NOTES.txt, not fatal.
 */
export async function collectBundle(
  view: PodView,
  client: CriClient,
  statusSocket: string,
  ref: { namespace: string; name: string },
  opts: { podctlVersion: string; logTail: number },
): Promise<Bundle> {
  const { namespace, name } = ref;
  const bundle = new Bundle(`${name}-bundle`);
  const notes: string[] = [];
  const viewed = await view.get(namespace, name);
  const rp = await findRuntimePod(view, namespace, name);
  if (!viewed || !rp) throw new PodctlError(`pod "${name}" not found in namespace ${namespace}`);
  const pod = viewed.pod;
  const { status, ...manifest } = pod;
  bundle.add('manifest.yaml', dump(manifest, { noRefs: true, lineWidth: -1 }));
  bundle.add('status.json', json(status));

  const fromWatch = viewed.source === 'watch' ? await fetchPodEvents(statusSocket, podMeta(pod).uid) : undefined;
  const events: DescribedEvent[] = fromWatch ?? eventsFromRuntime(rp.runtime);
  if (viewed.source !== 'watch') notes.push('events: implied by the runtime (no watch answered)');
  bundle.add('events.json', json(events));
  const timeline = await podTimeline(pod, rp, events);
  const mark = (t: (typeof timeline)[number]) => `${t.warning ? '  (warning)' : ''}${t.future ? '  (due)' : ''}`;
  const line = (t: (typeof timeline)[number]) =>
    `${new Date(t.at).toISOString()}  ${t.container ? `${t.container}: ` : ''}${t.what}${mark(t)}\n`;
  bundle.add('timeline.txt', timeline.map(line).join(''));

  for (const s of rp.sandboxes) {
    try {
      const doc = await client.podSandboxStatus(s.id, true);
      bundle.add(`inspect/sandbox-${s.id.slice(0, 12)}.json`, json({ ...doc, info: expandInfo(doc.info) }));
    } catch (err) {
      notes.push(`inspect sandbox ${s.id.slice(0, 12)}: ${errorMessage(err)}`);
    }
  }
  const spec = pod.spec!;
  const instances = [...rp.runtime.containers, ...(rp.runtime.ephemeral ?? [])];
  for (const c of instances) {
    try {
      const doc = await client.containerStatus(c.id, true);
      const redacted = redactEnv({ ...doc, info: expandInfo(doc.info) }, secretEnvPredicate(specContainer(spec, c.name)));
      bundle.add(`inspect/container-${c.name}-${c.id.slice(0, 12)}.json`, json(redacted));
    } catch (err) {
      notes.push(`inspect container ${c.name}: ${errorMessage(err)}`);
    }
  }

  for (const cname of new Set(instances.map((c) => c.name))) {
    const [current, previous] = instances.filter((c) => c.name === cname).sort(newerFirst);
    for (const [label, inst] of [
      ['current', current],
      ['previous', previous],
    ] as const) {
      if (!inst?.logPath) continue;
      const records = await readLogFileTail(inst.logPath, opts.logTail);
      bundle.add(`logs/${cname}/${label}.log`, records.map((r) => `${r.time} ${r.stream} ${r.text}\n`).join(''));
    }
  }

  bundle.add('trace.txt', 'No agent keeps trace lines: run `podctl watch --trace` (or `-o json`) to record them as they happen.\n');
  const versions: Record<string, unknown> = { podctl: opts.podctlVersion, node: process.version };
  try {
    const v = await client.version();
    versions.runtime = { name: v.runtimeName, version: v.runtimeVersion, apiVersion: v.runtimeApiVersion, endpoint: client.endpoint };
  } catch (err) {
    notes.push(`runtime version: ${errorMessage(err)}`);
  }
  bundle.add('versions.json', json(versions));
  if (notes.length) bundle.add('NOTES.txt', notes.map((n) => `${n}\n`).join(''));
  return bundle;
}

/** The archive written, or the one-line error saying why not. */
export async function writeBundle(bundle: Bundle, output: string): Promise<void> {
  try {
    await bundle.writeTo(output);
  } catch (err) {
    if (err instanceof BundleOutputError) throw new PodctlError(`bundle: ${err.message}`, { cause: err });
    throw err;
  }
}
