import { existsSync } from 'node:fs';
import { mkdir, rm, symlink, writeFile, copyFile, chmod } from 'node:fs/promises';
import { join } from 'node:path';
import { run } from './process.js';
import { which } from './packages.js';

/** An image podctl builds from Debian's static binaries, and the repository:tag names it is pushed under. */
interface ImageRecipe {
  name: string;
  /** Paths in the loopback registry (the registry host's namespace is dropped by containerd). */
  tags: { repo: string; tag: string; ref: string }[];
  populate(rootfs: string): Promise<void>;
  config: string[];
}

const MANIFEST_ACCEPT = [
  'application/vnd.oci.image.manifest.v1+json',
  'application/vnd.oci.image.index.v1+json',
  'application/vnd.docker.distribution.manifest.v2+json',
  'application/vnd.docker.distribution.manifest.list.v2+json',
].join(', ');

async function baseDirs(rootfs: string): Promise<void> {
  for (const d of ['bin', 'sbin', 'usr/bin', 'usr/sbin', 'etc', 'tmp', 'root', 'var/run', 'proc', 'sys', 'dev']) {
    await mkdir(join(rootfs, d), { recursive: true });
  }
  await chmod(join(rootfs, 'tmp'), 0o1777);
  await writeFile(join(rootfs, 'etc/passwd'), 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n');
  await writeFile(join(rootfs, 'etc/group'), 'root:x:0:\nnogroup:x:65534:\n');
}

export const IMAGE_RECIPES: ImageRecipe[] = [
  {
    name: 'busybox',
    tags: [
      { repo: 'library/busybox', tag: 'latest', ref: 'docker.io/library/busybox:latest' },
      { repo: 'library/busybox', tag: '1.36', ref: 'docker.io/library/busybox:1.36' },
      { repo: 'busybox', tag: 'latest', ref: 'registry.k8s.io/busybox:latest' },
    ],
    async populate(rootfs) {
      await baseDirs(rootfs);
      await copyFile('/bin/busybox', join(rootfs, 'bin/busybox'));
      await chmod(join(rootfs, 'bin/busybox'), 0o755);
      const applets = (await run('/bin/busybox', ['--list'])).split('\n').filter((a) => a && a !== 'busybox');
      for (const applet of applets) await symlink('busybox', join(rootfs, 'bin', applet)).catch(() => undefined);
    },
    config: ['--config.cmd', 'sh', '--config.env', 'PATH=/usr/sbin:/usr/bin:/sbin:/bin', '--config.workingdir', '/'],
  },
  {
    name: 'pause',
    tags: [
      { repo: 'pause', tag: '3.6', ref: 'registry.k8s.io/pause:3.6' },
      { repo: 'pause', tag: '3.9', ref: 'registry.k8s.io/pause:3.9' },
    ],
    async populate(rootfs) {
      await baseDirs(rootfs);
      // catatonit -P blocks forever as a pause process does.
      await copyFile(which('catatonit') ?? '/usr/bin/catatonit', join(rootfs, 'catatonit'));
      await chmod(join(rootfs, 'catatonit'), 0o755);
    },
    config: ['--config.entrypoint', '/catatonit', '--config.entrypoint', '-P', '--config.workingdir', '/'],
  },
];

export function servedImages(): string[] {
  return IMAGE_RECIPES.flatMap((r) => r.tags.map((t) => t.ref));
}

async function registryHas(port: number, repo: string, tag: string): Promise<boolean> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}/v2/${repo}/manifests/${tag}`, {
      method: 'HEAD',
      headers: { Accept: MANIFEST_ACCEPT },
    });
    return res.ok;
  } catch {
    return false;
  }
}

/** Builds each image once (umoci) and pushes the tags the registry lacks (skopeo); quick when all are there. */
export async function ensureImages(imagesDir: string, port: number, log: (line: string) => void): Promise<void> {
  for (const recipe of IMAGE_RECIPES) {
    const missing = [];
    for (const t of recipe.tags) if (!(await registryHas(port, t.repo, t.tag))) missing.push(t);
    if (missing.length === 0) continue;
    const layout = join(imagesDir, recipe.name, 'oci');
    const image = `${layout}:${recipe.name}`;
    if (!existsSync(join(layout, 'index.json'))) {
      log(`building image ${recipe.name}…`);
      const work = join(imagesDir, recipe.name);
      await rm(work, { recursive: true, force: true });
      await mkdir(work, { recursive: true });
      const bundle = join(work, 'bundle');
      await run('umoci', ['init', '--layout', layout]);
      await run('umoci', ['new', '--image', image]);
      await run('umoci', ['unpack', '--image', image, bundle]);
      await recipe.populate(join(bundle, 'rootfs'));
      await run('umoci', ['repack', '--image', image, bundle]);
      await run('umoci', ['config', '--image', image, ...recipe.config]);
      await rm(bundle, { recursive: true, force: true });
    }
    for (const t of missing) {
      await run('skopeo', ['copy', '--quiet', '--dest-tls-verify=false', `oci:${image}`, `docker://127.0.0.1:${port}/${t.repo}:${t.tag}`]);
    }
    log(`pushed ${missing.map((t) => t.ref).join(', ')} to the loopback registry`);
  }
}

export async function registryAnswers(port: number): Promise<boolean> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}/v2/`);
    return res.ok;
  } catch {
    return false;
  }
}
