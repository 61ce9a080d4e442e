import type * as T from '../core/cri/types.js';
import { PodctlError } from '../core/errors.js';
import * as L from '../core/kuberuntime/labels.js';

/** The one ID that `wanted` names in full or as a unique prefix; undefined when none does. */
export function resolveIdPrefix(kind: string, wanted: string, ids: string[]): string | undefined {
  if (ids.includes(wanted)) return wanted;
  const matches = ids.filter((id) => id.startsWith(wanted));
  if (matches.length > 1)
    throw new PodctlError(`${kind} ID prefix "${wanted}" is ambiguous: ${matches.length} ${kind}s match`, { hint: 'give more characters' });
  return matches[0];
}

/**
 * The sandbox `inspect pod` names: the newest of the pod of that name in the namespace, else a full
 * sandbox ID or a unique prefix of one.
 */
export async function findPodSandbox(
  client: { listPodSandbox(filter?: T.PodSandboxFilterInput): Promise<T.PodSandbox[]> },
  wanted: string,
  namespace: string,
): Promise<string> {
  const byName = await client.listPodSandbox({
    labelSelector: { [L.POD_NAME_LABEL]: wanted, [L.POD_NAMESPACE_LABEL]: namespace, [L.MANAGED_BY_LABEL]: L.MANAGED_BY_VALUE },
  });
  if (byName.length) return byName.sort((a, b) => b.createdAt - a.createdAt)[0]!.id;
  const ids = (await client.listPodSandbox()).map((s) => s.id);
  const id = resolveIdPrefix('pod sandbox', wanted, ids);
  if (!id)
    throw new PodctlError(`pod "${wanted}" not found: no sandbox ID starts with it, and no pod of that name in namespace ${namespace}`);
  return id;
}

const newest = (list: T.Container[]) => [...list].sort((a, b) => b.createdAt - a.createdAt)[0]!;

/**
 * The container `inspect container` names: POD/CONTAINER (or --pod POD with the container's name)
 * for the newest instance of that pod's container; else a full ID; else a container name in the
 * namespace, which is unique only within its pod (two pods with one: ambiguous, naming them); else a
 * unique ID prefix.
 */
export async function findContainer(
  client: { listContainers(filter?: T.ContainerFilterInput): Promise<T.Container[]> },
  wanted: string,
  opts: { namespace: string; pod?: string },
): Promise<T.Container> {
  let pod = opts.pod;
  let name = wanted;
  const slash = wanted.indexOf('/');
  if (slash > 0) {
    if (pod !== undefined)
      throw new PodctlError(
        `"${wanted}" names its pod already; give --pod ${pod} with the container's name alone, or POD/CONTAINER without --pod`,
        { exitCode: 2 },
      );
    [pod, name] = [wanted.slice(0, slash), wanted.slice(slash + 1)];
  }
  if (pod !== undefined) {
    const list = await client.listContainers({
      labelSelector: { [L.POD_NAME_LABEL]: pod, [L.POD_NAMESPACE_LABEL]: opts.namespace, [L.CONTAINER_NAME_LABEL]: name },
    });
    if (!list.length) throw new PodctlError(`container "${name}" of pod "${pod}" not found in namespace ${opts.namespace}`);
    return newest(list);
  }
  const all = await client.listContainers();
  const exact = all.find((c) => c.id === wanted);
  if (exact) return exact;
  const named = all.filter((c) => c.labels[L.CONTAINER_NAME_LABEL] === wanted && c.labels[L.POD_NAMESPACE_LABEL] === opts.namespace);
  const pods = [...new Set(named.map((c) => c.labels[L.POD_NAME_LABEL] ?? ''))].sort();
  if (pods.length === 1) return newest(named);
  if (pods.length > 1) {
    throw new PodctlError(
      `container name "${wanted}" is ambiguous in namespace ${opts.namespace}: pods ${pods.join(', ')} each have a container of that name`,
      {
        hint: `give the pod: \`podctl inspect container ${pods[0]}/${wanted}\` or --pod ${pods[0]}`,
      },
    );
  }
  const id = resolveIdPrefix(
    'container',
    wanted,
    all.map((c) => c.id),
  );
  if (id) return all.find((c) => c.id === id)!;
  // What reads as an ID was looked for as one; a name, in the namespace too.
  if (/^[0-9a-f]+$/.test(wanted)) throw new PodctlError(`container "${wanted}" not found`);
  throw new PodctlError(
    `container "${wanted}" not found: no pod in namespace ${opts.namespace} has a container of that name, ` +
      'and no container ID starts with it',
    {
      hint: 'in another namespace: -n NAMESPACE; `podctl get containers -a -A` lists every container',
    },
  );
}
