import { existsSync, statSync } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';
import { posix } from 'node:path';
import { Args, Flags } from '@oclif/core';
import { PodctlCommand } from '../cli/base.js';
import type { Location } from '../cli/cp.js';
import { namespaceFlag, podViewFlags } from '../cli/pod-flags.js';
import type { CriClient } from '../core/cri/client.js';
import { PodctlError } from '../core/errors.js';

export class Cp extends PodctlCommand {
  static override summary = 'Copy files and directories between a pod and this host (tar through exec, as kubectl cp).';
  static override description = `One side is POD:PATH (or NAMESPACE/POD:PATH), the other a local path.
POD:PATH to local: the container runs \`tar cf -\` and podctl unpacks its output; an existing local directory
receives the copy under its own name, otherwise the local path is the copy's new name. The archive is streamed
into a staging directory inside the destination and moved into place only once all of it passed: an entry with
an absolute path, a \`..\` that climbs out of the destination, a symlink pointing outside it, a device node or
a FIFO is refused and nothing is written. Files keep only their permission bits (no setuid, setgid or sticky
bit), less the umask, and belong to the user running podctl.
local to POD:PATH: podctl packs the file or directory and the container unpacks it with its own tar
(its image needs \`tar\`, \`head\` and \`sh\`, as busybox has); PATH is the copy's name in the container.`;
  static override examples = [
    '<%= config.bin %> cp web:/etc/hosts ./hosts',
    '<%= config.bin %> cp ./site web:/www -c app',
    '<%= config.bin %> cp -n team web:/var/log/app ./logs',
  ];
  static override args = {
    src: Args.string({ description: 'Source: POD:PATH or a local path.', required: true, ignoreStdin: true }),
    dest: Args.string({ description: 'Destination: a local path or POD:PATH.', required: true, ignoreStdin: true }),
  };
  static override flags = {
    ...podViewFlags,
    namespace: namespaceFlag,
    container: Flags.string({ char: 'c', summary: "Container (default: the pod's default container)." }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(Cp);
    const [{ parseLocation }, { chooseContainer, openPodView, requirePod, requireRunning }] = await Promise.all([import('../cli/cp.js'), import('../cli/podview.js')]);
    const src = parseLocation(args.src);
    const dest = parseLocation(args.dest);
    if (!!src.pod === !!dest.pod) {
      throw new PodctlError('exactly one of SRC and DEST must be POD:PATH', { hint: 'e.g. `podctl cp web:/etc/hosts ./hosts` or `podctl cp ./f web:/tmp/f`', exitCode: 2 });
    }
    const remote = (src.pod ? src : dest) as Required<Pick<Location, 'pod'>> & Location;
    const { view, client } = await openPodView(flags);
    try {
      const pod = await requirePod(view, remote.namespace ?? flags.namespace, remote.pod);
      const container = chooseContainer(pod, flags.container);
      const id = requireRunning(pod, container).id;
      if (src.pod) await this.fromPod(client, id, src.path, dest.path);
      else await this.toPod(client, id, src.path, dest.path);
    } finally {
      client.close();
    }
  }

  private async fromPod(client: CriClient, id: string, remotePath: string, local: string): Promise<void> {
    const clean = posix.normalize(remotePath).replace(/(.)\/$/, '$1');
    const base = posix.basename(clean);
    if (!base || base === '..' || base === '.') throw new PodctlError(`${remotePath}: name a file or directory to copy`, { exitCode: 2 });
    const target = resolve(local);
    const intoDir = existsSync(target) && statSync(target).isDirectory();
    const destDir = intoDir ? target : dirname(target);
    if (!existsSync(destDir)) throw new PodctlError(`cp: ${dirname(local)}: no such directory`);
    const [{ collectText: collect }, { streamExec }, { Extraction, TarError }] = await Promise.all([import('../cli/cp.js'), import('../core/exec/stream.js'), import('../core/exec/tar.js')]);
    const url = (await client.exec({ containerId: id, cmd: ['tar', 'cf', '-', '-C', posix.dirname(clean), base], stdout: true, stderr: true })).url;
    const extraction = await Extraction.open(destDir, intoDir ? undefined : { from: base, to: basename(target) });
    try {
      const stderr = collect();
      const exitCode = await streamExec(url, { stdout: extraction.input, stderr: stderr.stream });
      if (exitCode !== 0) throw new PodctlError(`cp: tar in the container exited ${exitCode}: ${stderr.text().trim() || 'no message'}`);
      await extraction.finish();
    } catch (err) {
      if (err instanceof TarError) throw new PodctlError(`cp: ${err.message}`, { cause: err });
      throw err;
    } finally {
      await extraction.discard();
    }
  }

  private async toPod(client: CriClient, id: string, local: string, remotePath: string): Promise<void> {
    if (!existsSync(local)) throw new PodctlError(`cp: ${local}: no such file or directory`);
    const [{ collectText: collect }, { streamExec }, { packLocal, TarError }] = await Promise.all([import('../cli/cp.js'), import('../core/exec/stream.js'), import('../core/exec/tar.js')]);
    const clean = posix.normalize(remotePath).replace(/(.)\/$/, '$1');
    const base = posix.basename(clean);
    if (!base || base === '..' || base === '.') throw new PodctlError(`${remotePath}: name the copy's path in the container`, { exitCode: 2 });
    let archive: Awaited<ReturnType<typeof packLocal>>;
    try {
      archive = await packLocal(local, base);
    } catch (err) {
      if (err instanceof TarError) throw new PodctlError(`cp: ${err.message}`, { cause: err });
      throw err;
    }
    // v4 cannot close the remote stdin: head reads exactly the archive, so tar sees its end.
    const script = 'mkdir -p "$1" && head -c "$2" | tar xf - -C "$1"';
    const url = (await client.exec({ containerId: id, cmd: ['sh', '-c', script, 'sh', posix.dirname(clean), String(archive.size)], stdin: true, stdout: true, stderr: true })).url;
    const stderr = collect();
    let exitCode: number;
    try {
      exitCode = await streamExec(url, { stdinFrames: archive.frames(), stdout: collect().stream, stderr: stderr.stream });
    } catch (err) {
      if (err instanceof TarError) throw new PodctlError(`cp: ${err.message}`, { cause: err });
      throw err;
    }
    if (exitCode !== 0) throw new PodctlError(`cp: unpacking in the container exited ${exitCode}: ${stderr.text().trim() || 'no message'}`);
  }
}
