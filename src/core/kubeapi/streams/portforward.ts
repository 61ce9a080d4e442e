import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { KubeStatusError } from '../status.js';
import type { PodStreamContext } from './context.js';
import { writeSocketStatus } from './spdy.js';

/** Placeholder until pods/portforward lands (its own helper replaces this file). */
export function handlePortForward(_req: IncomingMessage, socket: Duplex, _head: Buffer, _url: URL, _ctx: PodStreamContext): void {
  writeSocketStatus(socket, new KubeStatusError(501, 'NotImplemented', 'pods/portforward is not served yet'));
}
