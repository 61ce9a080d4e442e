import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appArmorProfile, containerConfig, podSandboxConfig } from '../../src/core/kuberuntime/config.js';
import { container, makePod } from '../support/builders.js';

test("AppArmor: the container's profile, else the pod's, else the annotation, sent as the CRI SecurityProfile and the older string", () => {
  const pod = makePod({
    containers: [container('app'), container('side', { securityContext: { appArmorProfile: { type: 'Unconfined' } } })],
  });
  assert.equal(appArmorProfile(pod, pod.spec!.containers[0]!), undefined, 'none set: nothing sent, the runtime default applies');
  pod.spec!.securityContext = { appArmorProfile: { type: 'Localhost', localhostProfile: 'k8s-deny-write' } };
  assert.deepEqual(appArmorProfile(pod, pod.spec!.containers[0]!), {
    apparmor: { profileType: 'Localhost', localhostRef: 'k8s-deny-write' },
    apparmorProfile: 'localhost/k8s-deny-write',
  });
  assert.deepEqual(
    appArmorProfile(pod, pod.spec!.containers[1]!),
    { apparmor: { profileType: 'Unconfined' }, apparmorProfile: 'unconfined' },
    'the container wins',
  );
  const annotated = makePod();
  annotated.metadata!.annotations = { 'container.apparmor.security.beta.kubernetes.io/app': 'runtime/default' };
  assert.deepEqual(appArmorProfile(annotated, annotated.spec!.containers[0]!), {
    apparmor: { profileType: 'RuntimeDefault' },
    apparmorProfile: 'runtime/default',
  });
});

test("SELinux options: the pod's go on the sandbox; a container's replace the pod's as a whole", () => {
  const pod = makePod({ containers: [container('app'), container('own', { securityContext: { seLinuxOptions: { type: 'spc_t' } } })] });
  pod.spec!.securityContext = { seLinuxOptions: { level: 's0:c1,c2', user: 'system_u' } };
  const sandbox = podSandboxConfig(pod, 0, '/var/log/pods');
  assert.deepEqual(sandbox.linux?.securityContext?.selinuxOptions, { user: 'system_u', role: '', type: '', level: 's0:c1,c2' });
  const cfg = (i: number) =>
    containerConfig({ pod, container: pod.spec!.containers[i]!, kind: 'app', restartCount: 0, imageRef: 'sha256:x' }).linux
      ?.securityContext;
  assert.deepEqual(cfg(0)?.selinuxOptions, { user: 'system_u', role: '', type: '', level: 's0:c1,c2' });
  assert.deepEqual(cfg(1)?.selinuxOptions, { user: '', role: '', type: 'spc_t', level: '' });
  assert.equal(
    containerConfig({ pod: makePod(), container: container('app'), kind: 'app', restartCount: 0, imageRef: 'sha256:x' }).linux
      ?.securityContext?.selinuxOptions,
    undefined,
  );
});
