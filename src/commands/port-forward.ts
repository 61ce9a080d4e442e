import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { Args, Flags } from '@oclif/core';
import type { PortSpec } from '../core/exec/portforward.js';
import { PodctlCommand } from '../cli/base.js';
import { namespaceFlag, podArg, podViewFlags } from '../cli/pod-flags.js';
import { errorMessage, PodctlError } from '../core/errors.js';
import { prose } from '../cli/prose.js';

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '::1']);

export class PortForward extends PodctlCommand {
  static override summary = "Forward local ports to a pod's ports (CRI PortForward over the runtime's streaming server).";
  static override description = prose`Each PORT is [LOCAL:]REMOTE; LOCAL 0 or empty (:8080) picks a free port, printed on the
"Forwarding from" line. Listens on 127.0.0.1 only unless --address says otherwise (anything else is reachable
from other hosts: a warning says so). Every local connection gets its own stream into the pod's network
namespace, so many may run at once. Runs until Ctrl-C; when the pod's sandbox stops, podctl says so and exits 1.`;
  static override examples = [
    '<%= config.bin %> port-forward pod/web 18080:8080',
    '<%= config.bin %> port-forward web :8080 9090',
    '<%= config.bin %> port-forward web 8080 --address 0.0.0.0',
  ];
  static override strict = false;
  static override args = {
    pod: Args.string({ description: 'Pod name (or pod/NAME).', required: true, ignoreStdin: true }),
    ports: Args.string({ description: '[LOCAL:]REMOTE, one or more.', required: true, ignoreStdin: true }),
  };
  static override flags = {
    ...podViewFlags,
    namespace: namespaceFlag,
    address: Flags.string({ summary: 'Local addresses to listen on, comma-separated.', default: '127.0.0.1' }),
    'check-interval': Flags.integer({ summary: 'How often (ms) to check that the pod still runs.', default: 1000, hidden: true }),
  };

  async run(): Promise<void> {
    const { args, flags, argv } = await this.parse(PortForward);
    // What only this command's path uses: loaded when it runs, not with the command index.
    const [{ forwardConnection, parsePortSpec }, { openPodView, requirePod }] = await Promise.all([
      import('../core/exec/portforward.js'),
      import('../cli/podview.js'),
    ]);
    const specs: PortSpec[] = [];
    for (const text of (argv as string[]).slice(1)) {
      try {
        specs.push(parsePortSpec(text));
      } catch (err) {
        throw new PodctlError(`port-forward: ${(err as Error).message}`, { exitCode: 2 });
      }
    }
    const addresses = flags.address
      .split(',')
      .map((a) => a.trim())
      .filter(Boolean);
    const wide = addresses.filter((a) => !LOOPBACK.has(a));
    if (wide.length)
      process.stderr.write(`Warning: listening on ${wide.join(', ')}: anyone who can reach this host there can connect into the pod\n`);
    const name = podArg(args.pod);
    const { view, client } = await openPodView(flags);
    const servers: Server[] = [];
    const sockets = new Set<Socket>();
    let timer: NodeJS.Timeout | undefined;
    try {
      const pod = await requirePod(view, flags.namespace, name);
      if (pod.sandbox.state !== 'SANDBOX_READY') throw new PodctlError(`pod "${name}" is not running (its sandbox is not ready)`);
      const sandboxId = pod.sandbox.id;
      for (const spec of specs) {
        let local = spec.local;
        for (const address of addresses) {
          const server = createServer({ allowHalfOpen: true }, (socket) => {
            sockets.add(socket);
            socket.on('close', () => sockets.delete(socket));
            this.log(`Handling connection for ${local}`);
            client
              .portForward(sandboxId, [spec.remote])
              .then((url) => forwardConnection(url, spec.remote, socket))
              .catch((err) => {
                process.stderr.write(`error forwarding port ${spec.remote} to pod ${name}: ${errorMessage(err)}\n`);
                socket.destroy();
              });
          });
          await new Promise<void>((resolve, reject) => {
            server.once('error', (err: NodeJS.ErrnoException) =>
              reject(
                new PodctlError(
                  `port-forward: cannot listen on ${address}:${local}: ${err.code === 'EADDRINUSE' ? 'the port is in use' : err.message}`,
                ),
              ),
            );
            server.listen(local, address, () => resolve());
          });
          servers.push(server);
          // Every address of a random port gets the port the first one got.
          local = (server.address() as AddressInfo).port;
          this.log(`Forwarding from ${address.includes(':') ? `[${address}]` : address}:${local} -> ${spec.remote}`);
        }
      }
      // Ends with Ctrl-C, or when the pod's sandbox is gone or stopped.
      const stopped = await new Promise<string | undefined>((resolve) => {
        const onSignal = () => resolve(undefined);
        process.once('SIGINT', onSignal);
        process.once('SIGTERM', onSignal);
        const check = async () => {
          try {
            const status = await client.podSandboxStatus(sandboxId);
            if (status.status?.state !== 'SANDBOX_READY') return resolve(`pod "${name}" stopped (its sandbox is no longer ready)`);
          } catch {
            return resolve(`pod "${name}" is gone (its sandbox was removed)`);
          }
          timer = setTimeout(() => void check(), flags['check-interval']);
        };
        timer = setTimeout(() => void check(), flags['check-interval']);
      });
      if (stopped) throw new PodctlError(`port-forward: ${stopped}; no more connections are forwarded`);
    } finally {
      clearTimeout(timer);
      for (const s of servers) s.close();
      for (const s of sockets) s.destroy();
      client.close();
    }
  }
}
