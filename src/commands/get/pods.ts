import { join } from 'node:path';
import { request } from 'node:http';
import { Args, Flags } from '@oclif/core';
import type { IPod } from 'kubernetes-models/v1';
import { PodctlCommand } from '../../cli/base.js';
import yaml from 'js-yaml';
import { podTable } from '../../cli/table.js';
import { PodctlError } from '../../core/errors.js';

function fetchPods(socket: string): Promise<IPod[]> {
  return new Promise((resolve, reject) => {
    request({ socketPath: socket, path: '/pods' }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => {
        try {
          resolve((JSON.parse(body) as { items: IPod[] }).items);
        } catch (err) {
          reject(err);
        }
      });
    })
      .on('error', reject)
      .end();
  });
}

export class GetPods extends PodctlCommand {
  static override summary = "List the pods a running `podctl watch` keeps, with kubectl's columns.";
  static override description = 'Reads the status socket of the running watch (<root-dir>/podctl.sock), so what it prints is what the loop sees: the same v1 PodList as its /pods endpoint.';
  static override examples = ['<%= config.bin %> get pods', '<%= config.bin %> get pods -A -o wide', '<%= config.bin %> get pods web -o yaml', '<%= config.bin %> get pods -o name'];
  static override args = { name: Args.string({ description: 'Only this pod.' }) };
  static override flags = {
    namespace: Flags.string({ char: 'n', summary: 'Namespace.', default: 'default' }),
    'all-namespaces': Flags.boolean({ char: 'A', summary: 'Pods of every namespace.' }),
    output: Flags.string({ char: 'o', summary: 'Output format.', options: ['table', 'wide', 'json', 'yaml', 'name'], default: 'table' }),
    'root-dir': Flags.string({ summary: 'State directory of the watch to ask.', default: '/var/lib/podctl', env: 'PODCTL_ROOT_DIR' }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(GetPods);
    const socket = join(flags['root-dir'], 'podctl.sock');
    let pods: IPod[];
    try {
      pods = await fetchPods(socket);
    } catch (err) {
      throw new PodctlError(`no podctl watch answers on ${socket} (${(err as Error).message})`, { hint: 'start one with `podctl watch DIR`, or pass --root-dir' });
    }
    pods = pods.filter((p) => (flags['all-namespaces'] || p.metadata?.namespace === flags.namespace) && (!args.name || p.metadata?.name === args.name));
    if (args.name && pods.length === 0) throw new PodctlError(`pod "${args.name}" not found in namespace ${flags.namespace}`);
    const sorted = pods.sort((a, b) => `${a.metadata!.namespace}/${a.metadata!.name}`.localeCompare(`${b.metadata!.namespace}/${b.metadata!.name}`));
    if (flags.output === 'json' || flags.output === 'yaml') {
      // One named pod prints as a Pod; a listing is always a List, as kubectl prints it.
      const doc = args.name ? sorted[0] : { apiVersion: 'v1', kind: 'List', metadata: {}, items: sorted };
      this.log(flags.output === 'json' ? JSON.stringify(doc, null, 2) : yaml.dump(doc, { noRefs: true, lineWidth: 120 }));
      return;
    }
    if (flags.output === 'name') {
      for (const p of sorted) this.log(`pod/${p.metadata!.name}`);
      return;
    }
    if (sorted.length === 0) {
      process.stderr.write(`No resources found in ${flags['all-namespaces'] ? 'any' : flags.namespace} namespace.\n`);
      return;
    }
    this.log(podTable(sorted, { allNamespaces: flags['all-namespaces'], wide: flags.output === 'wide' }));
  }
}
