import type { IContainer, IPod, ISecret } from 'kubernetes-models/v1';
import { keyringFromSecrets, nodeKeyring } from '../credentials/keyring.js';
import type { Clock } from '../clock.js';
import type { ImageService } from '../cri/client.js';
import { isNotFound } from '../cri/errors.js';
import { errorMessage } from '../errors.js';
import { Backoff, IMAGE_BACKOFF_INITIAL_MS, IMAGE_BACKOFF_MAX_MS } from '../util/backoff.js';
import type * as T from '../cri/types.js';
import { podMeta } from '../util/pod-key.js';

/** A container that cannot start yet, with the kubelet's waiting reason. */
export class StartContainerError extends Error {
  constructor(
    readonly reason: string,
    message: string,
  ) {
    super(message);
    this.name = 'StartContainerError';
  }
}

export type PullPolicy = 'Always' | 'IfNotPresent' | 'Never';

export function pullPolicyOf(container: IContainer): PullPolicy {
  return (container.imagePullPolicy as PullPolicy | undefined) ?? 'IfNotPresent';
}

/** Whether the image must be pulled before the container starts ('never': it cannot start). */
export function pullDecision(policy: PullPolicy, present: boolean): 'pull' | 'use' | 'never' {
  if (policy === 'Always') return 'pull';
  if (present) return 'use';
  return policy === 'Never' ? 'never' : 'pull';
}

/** Where pull credentials come from: the pod's imagePullSecrets and the node's docker config files. */
export interface PullCredentialSources {
  /** A Secret of the manifest set, by namespace and name. */
  secret?(namespace: string, name: string): ISecret | undefined;
  /** The node's docker config paths, searched in order at each pull (nodeDockerConfigPaths). */
  nodeConfigPaths?: string[];
  /** The pull secrets a pod names that the set does not provide (the kubelet's FailedToRetrieveImagePullSecret). */
  onMissingPullSecrets?(pod: IPod, names: string[]): void;
}

/** The last failed pull of an image for a pod, kept through its back-off. */
interface PullFailure {
  message: string;
  /** The runtime answered NOT_FOUND: no registry it may ask has this image. */
  notFound: boolean;
}

/** The kubelet's imageManager.EnsureImageExists: pull policy, pull credentials and ImagePullBackOff. */
export class ImagePuller {
  readonly backoff: Backoff;
  /** By back-off key: what the last pull said, for the back-off's message (the kubelet's prevPullErrMsg). */
  private readonly failures = new Map<string, PullFailure>();

  constructor(
    private readonly images: ImageService,
    clock: Clock,
    /** The image manager's events about a container's image (Pulling, Pulled), as the kubelet records them. */
    private readonly record?: (pod: IPod, container: IContainer, type: 'Normal' | 'Warning', reason: string, message: string) => void,
    private readonly credentials: PullCredentialSources = {},
  ) {
    this.backoff = new Backoff(clock, IMAGE_BACKOFF_INITIAL_MS, IMAGE_BACKOFF_MAX_MS);
  }

  /**
   * The credentials to try for this image, in the kubelet's order: the pod's pull
   * secrets' matches first, then the node's. None: the pull goes without any.
   */
  credentialsFor(pod: IPod, image: string): T.AuthConfigInput[] {
    const namespace = podMeta(pod).namespace ?? 'default';
    const secrets: ISecret[] = [];
    const missing: string[] = [];
    for (const ref of pod.spec?.imagePullSecrets ?? []) {
      if (!ref.name) continue;
      const s = this.credentials.secret?.(namespace, ref.name);
      if (s) secrets.push(s);
      else missing.push(ref.name);
    }
    if (missing.length) this.credentials.onMissingPullSecrets?.(pod, missing);
    const node = this.credentials.nodeConfigPaths ? nodeKeyring(this.credentials.nodeConfigPaths) : undefined;
    return [...keyringFromSecrets(secrets).lookup(image), ...(node?.lookup(image) ?? [])];
  }

  /** PullImage with each credential in turn until one works; without any when none matches. */
  private async pull(pod: IPod, image: string, sandboxConfig: T.PodSandboxConfigInput): Promise<string> {
    const creds = this.credentialsFor(pod, image);
    if (creds.length === 0) return this.images.pullImage(image, sandboxConfig);
    const errors: string[] = [];
    for (const auth of creds) {
      try {
        return await this.images.pullImage(image, sandboxConfig, auth);
      } catch (err) {
        errors.push(errorMessage(err));
      }
    }
    throw new Error(errors.length === 1 ? errors[0] : `[${errors.join(', ')}]`);
  }

  /**
   * Asks the image service, at once, whether each container's image is present: the first thing
   * ensureImageExists asks. SyncPod asks while the sandbox is being created, so the answer is
   * there when the container starts. An image that Always pulls is not asked about.
   */
  checkPresent(containers: IContainer[]): Map<string, Promise<T.Image | undefined>> {
    const out = new Map<string, Promise<T.Image | undefined>>();
    for (const c of containers) {
      const image = c.image ?? '';
      if (pullPolicyOf(c) === 'Always' || out.has(image)) continue;
      const present = this.images.imageStatus(image);
      // Awaited (and its error thrown) by ensureImageExists; unawaited when the sandbox fails first.
      present.catch(() => undefined);
      out.set(image, present);
    }
    return out;
  }

  /** Returns the image reference to create the container from. `checked`: what checkPresent asked for this image. */
  async ensureImageExists(
    pod: IPod,
    container: IContainer,
    sandboxConfig: T.PodSandboxConfigInput,
    now: number,
    checked?: Promise<T.Image | undefined>,
  ): Promise<string> {
    const image = container.image ?? '';
    const policy = pullPolicyOf(container);
    // Always pulls without asking whether the image is present.
    const present = policy === 'Always' ? undefined : await (checked ?? this.images.imageStatus(image));
    const decision = pullDecision(policy, present !== undefined);
    if (decision === 'use') {
      this.record?.(pod, container, 'Normal', 'Pulled', `Container image "${image}" already present on machine`);
      return present!.id;
    }
    if (decision === 'never') {
      throw new StartContainerError('ErrImageNeverPull', `Container image "${image}" is not present with pull policy of Never`);
    }
    const key = pullKey(pod, image);
    if (this.backoff.isInBackOffSinceUpdate(key, now)) {
      // As the kubelet since 1.32: the back-off says why the last pull failed.
      const last = this.failures.get(key);
      throw new StartContainerError(
        'ImagePullBackOff',
        `Back-off pulling image "${image}"${last ? `: ErrImagePull: ${last.message}` : ''}`,
      );
    }
    this.failures.delete(key);
    this.record?.(pod, container, 'Normal', 'Pulling', `Pulling image "${image}"`);
    const started = Date.now();
    try {
      const ref = await this.pull(pod, image, sandboxConfig);
      this.backoff.reset(key);
      this.record?.(pod, container, 'Normal', 'Pulled', `Successfully pulled image "${image}" in ${goDuration(Date.now() - started)}`);
      return ref || image;
    } catch (err) {
      this.backoff.next(key, now);
      const message = `failed to pull image "${image}": ${errorMessage(err)}`;
      this.failures.set(key, { message, notFound: isNotFound(err) });
      throw new StartContainerError('ErrImagePull', message);
    }
  }

  /**
   * A container of the pod whose image's last pull the runtime answered NOT_FOUND, with that
   * pull's message: an image no registry the runtime may ask has, which waiting will not bring.
   */
  imageNotFound(pod: IPod): { container: string; image: string; message: string } | undefined {
    const spec = pod.spec;
    for (const c of [...(spec?.initContainers ?? []), ...(spec?.containers ?? [])]) {
      const failure = this.failures.get(pullKey(pod, c.image ?? ''));
      if (failure?.notFound) return { container: c.name, image: c.image ?? '', message: failure.message };
    }
    return undefined;
  }

  /** Forgets the back-offs untouched for twice their maximum, and the pull failures they kept. */
  gc(): void {
    this.backoff.gc();
    for (const key of this.failures.keys()) if (!this.backoff.has(key)) this.failures.delete(key);
  }
}

/** Image pulls back off per pod and image, as the kubelet's backOffKey. */
export const pullKey = (pod: IPod, image: string): string => `${podMeta(pod).uid}/${image}`;

/** A duration as Go prints a time.Duration truncated to milliseconds (the kubelet's event text): 850ms, 1.25s, 2m3.5s. */
export function goDuration(ms: number): string {
  const whole = Math.max(0, Math.trunc(ms));
  if (whole < 1000) return `${whole}ms`;
  const minutes = Math.floor(whole / 60_000);
  const seconds = `${(whole % 60_000) / 1000}s`;
  return minutes ? `${minutes}m${seconds}` : seconds;
}
