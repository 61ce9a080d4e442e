import { existsSync } from 'node:fs';
import {
  allocatable,
  hostCapacity,
  hostHasAppArmor,
  hostHasSELinux,
  nodeLabels,
  parseMapFlag,
  parseReserved,
  type NodeInfo,
} from '../core/admission.js';

// Apart from the node flags (src/cli/node-flags.ts): declaring them loads no admission code.

/** This node for admission: its labels and allocatable (capacity minus what is reserved). */
export function nodeInfoFromFlags(flags: {
  'node-name': string;
  'root-dir': string;
  'node-labels'?: string;
  'system-reserved'?: string;
  'kube-reserved'?: string;
  'max-pods': number;
}): NodeInfo {
  const capacity = hostCapacity(existsSync(flags['root-dir']) ? flags['root-dir'] : '/', flags['max-pods']);
  return {
    name: flags['node-name'],
    labels: nodeLabels(flags['node-name'], parseMapFlag(flags['node-labels'], '--node-labels')),
    allocatable: allocatable(
      capacity,
      parseReserved(flags['system-reserved'], '--system-reserved'),
      parseReserved(flags['kube-reserved'], '--kube-reserved'),
    ),
    appArmor: hostHasAppArmor(),
    seLinux: hostHasSELinux(),
  };
}
