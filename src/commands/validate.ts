import { Args, Flags } from '@oclif/core';
import { PodctlCommand } from '../cli/base.js';
import type { ManifestProblem } from '../core/pod/index.js';
import { PodctlError } from '../core/errors.js';
import { hostname } from 'node:os';
import { relative } from 'node:path';
import { podMeta } from '../core/util/pod-key.js';
import { prose } from '../cli/prose.js';

/** What admission's refusals are about, as validate names them (the rest: a pod larger than the host). */
const REFUSALS: Record<string, { field: string; says: string }> = {
  AppArmor: { field: 'securityContext.appArmorProfile', says: 'never runs on this host' },
  SELinux: { field: 'securityContext.seLinuxOptions', says: 'never runs on this host' },
  SupplementalGroupsPolicyNotSupported: { field: 'spec.securityContext.supplementalGroupsPolicy', says: 'this runtime will refuse it' },
  NodePorts: { field: 'spec.containers[].ports[].hostPort', says: 'never fits this host' },
};

export class Validate extends PodctlCommand {
  static override summary = 'Check manifests without running anything: every error and warning, with its file, document and field.';
  static override description = prose`Reads the files (multi-document YAML or JSON, directories as run and watch read them) and reports what
podctl would refuse (errors) and what it would run differently from a cluster (warnings: fields one host
cannot honour, such as nodeSelector or tolerations). Nothing is started and no runtime is needed.

Exit 0 when there is no error (warnings allowed), 1 when there is one, 2 on a usage error.`;
  static override examples = [
    '<%= config.bin %> validate pod.yaml',
    '<%= config.bin %> validate manifests/ -o json',
    'cat pod.yaml | <%= config.bin %> validate -',
  ];
  static override strict = false;
  static override args = {
    paths: Args.string({ description: 'Manifest files or directories (- for stdin).', required: true, ignoreStdin: true }),
  };
  static override flags = {
    output: Flags.string({ char: 'o', summary: 'Output format.', options: ['text', 'json'], default: 'text' }),
  };

  async run(): Promise<void> {
    const { argv, flags } = await this.parse(Validate);
    // The validators and the admission checks: loaded when validate runs, not with the command index.
    const [{ readStdin }, { formatProblem, loadManifests, ManifestError }, { admitPod, hostCapacity, hostHasAppArmor, hostHasSELinux }] =
      await Promise.all([import('../cli/manifests.js'), import('../core/pod/index.js'), import('../core/admission.js')]);
    let findings: ManifestProblem[];
    let counts = { pods: 0, configMaps: 0, secrets: 0, runtimeClasses: 0 };
    try {
      const set = await loadManifests(argv as string[], { nodeName: hostname(), readStdin });
      findings = [...set.warnings];
      // A pod larger than this whole host would be refused at admission (OutOfcpu, OutOfmemory, …) wherever it runs here.
      const host = {
        name: hostname(),
        labels: {},
        allocatable: hostCapacity('/', 110),
        appArmor: hostHasAppArmor(),
        seLinux: hostHasSELinux(),
      };
      for (const lp of set.pods) {
        const r = admitPod({ ...lp.pod, spec: { ...lp.pod.spec!, nodeSelector: undefined, affinity: undefined } }, [], host);
        if (r.admit) continue;
        const file = lp.source.kind === 'file' ? relative(process.cwd(), lp.source.path) || lp.source.path : '<stdin>';
        const refusal = REFUSALS[r.reason] ?? { field: 'spec.containers[].resources.requests', says: 'never fits this host' };
        findings.push({
          file,
          index: lp.source.index,
          kind: 'Pod',
          name: podMeta(lp.pod).name,
          field: refusal.field,
          message: `${refusal.says}: ${r.reason}: ${r.message}`,
          severity: 'warning',
        });
      }
      counts = {
        pods: set.pods.length,
        configMaps: set.configMaps.length,
        secrets: set.secrets.length,
        runtimeClasses: set.runtimeClasses.length,
      };
    } catch (err) {
      if (!(err instanceof ManifestError)) throw err;
      findings = [...err.problems, ...err.warnings].sort((a, b) => a.file.localeCompare(b.file) || a.index - b.index);
    }
    const errors = findings.filter((f) => f.severity === 'error').length;
    if (flags.output === 'json') {
      this.log(
        JSON.stringify(
          {
            valid: errors === 0,
            ...counts,
            findings: findings.map((f) => ({
              severity: f.severity,
              file: f.file,
              document: f.index + 1,
              kind: f.kind,
              name: f.name,
              field: f.field,
              message: f.message,
            })),
          },
          null,
          2,
        ),
      );
    } else {
      for (const f of findings) this.log(`${f.severity === 'error' ? 'error' : 'warning'}: ${formatProblem(f)}`);
      const warnings = findings.length - errors;
      this.log(
        errors
          ? `${errors} error(s), ${warnings} warning(s): podctl would refuse these manifests`
          : `valid: ${counts.pods} pod(s), ${counts.configMaps} ConfigMap(s), ${counts.secrets} Secret(s)` +
              `${counts.runtimeClasses ? `, ${counts.runtimeClasses} RuntimeClass(es)` : ''}; ${warnings} warning(s)`,
      );
    }
    if (errors) throw new PodctlError(`${errors} error(s) in ${(argv as string[]).join(', ')}`, { exitCode: 1 });
  }
}
