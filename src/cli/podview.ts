import { join } from 'node:path';
import { Flags } from '@oclif/core';
import { realClock } from '../core/clock.js';
import type { CriClient } from '../core/cri/client.js';
import { PodView } from '../core/podview/index.js';
import { hostIP } from './node.js';
import { connect, type GlobalFlags } from './runtime.js';

export const DEFAULT_ROOT_DIR = '/var/lib/podctl';

/** Flags of the commands that find pods: the watch to ask first, and the namespace. */
export const podViewFlags = {
  'root-dir': Flags.string({ summary: 'State directory of the watch to ask first (its podctl.sock); without one, the runtime is read.', default: DEFAULT_ROOT_DIR, env: 'PODCTL_ROOT_DIR' }),
};

export const namespaceFlag = Flags.string({ char: 'n', summary: 'Namespace.', default: 'default' });

/** A PodView on the resolved runtime, preferring the watch under --root-dir. */
export async function openPodView(flags: GlobalFlags & { 'root-dir': string }): Promise<{ view: PodView; client: CriClient; statusSocket: string }> {
  const { client } = await connect(flags);
  const statusSocket = join(flags['root-dir'], 'podctl.sock');
  const view = new PodView({ runtime: client, images: client, clock: realClock, statusSocket, hostIP: hostIP() });
  return { view, client, statusSocket };
}
