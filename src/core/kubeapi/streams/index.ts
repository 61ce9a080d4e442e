import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { PodStreamContext } from './context.js';
import { handlePortForward } from './portforward.js';
import { handleRemoteCommand } from './remotecommand.js';

export { servePodLog } from './log.js';
export type { PodStreamContext } from './context.js';

/**
 * GET with Upgrade: websocket, or POST with Upgrade: SPDY/3.1, on .../pods/NAME/exec|attach|portforward.
 * A request that cannot be served (a bad query, no such container, one not running) is answered with a
 * metav1.Status on the socket, which is then closed.
 */
export function handlePodUpgrade(
  kind: 'exec' | 'attach' | 'portforward',
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  url: URL,
  ctx: PodStreamContext,
): void {
  if (kind === 'portforward') handlePortForward(req, socket, head, url, ctx);
  else handleRemoteCommand(kind, req, socket, head, url, ctx);
}
