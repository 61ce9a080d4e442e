import type { IContainer, IPod } from 'kubernetes-models/v1';
import type { Clock } from '../clock.js';
import type { ImageService } from '../cri/client.js';
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

/** The kubelet's imageManager.EnsureImageExists: pull policy and ImagePullBackOff. */
export class ImagePuller {
  readonly backoff: Backoff;

  constructor(
    private readonly images: ImageService,
    clock: Clock,
    private readonly onPulled?: (image: string, durationMs: number) => void,
  ) {
    this.backoff = new Backoff(clock, IMAGE_BACKOFF_INITIAL_MS, IMAGE_BACKOFF_MAX_MS);
  }

  /** Returns the image reference to create the container from. */
  async ensureImageExists(pod: IPod, container: IContainer, sandboxConfig: T.PodSandboxConfigInput, now: number): Promise<string> {
    const image = container.image ?? '';
    const policy = pullPolicyOf(container);
    // Always pulls without asking whether the image is present.
    const present = policy === 'Always' ? undefined : await this.images.imageStatus(image);
    const decision = pullDecision(policy, present !== undefined);
    if (decision === 'use') return present!.id;
    if (decision === 'never') {
      throw new StartContainerError('ErrImageNeverPull', `Container image "${image}" is not present with pull policy of Never`);
    }
    const key = `${podMeta(pod).uid}/${image}`;
    if (this.backoff.isInBackOffSinceUpdate(key, now)) {
      throw new StartContainerError('ImagePullBackOff', `Back-off pulling image "${image}"`);
    }
    const started = Date.now();
    try {
      const ref = await this.images.pullImage(image, sandboxConfig);
      this.backoff.reset(key);
      this.onPulled?.(image, Date.now() - started);
      return ref || image;
    } catch (err) {
      this.backoff.next(key, now);
      throw new StartContainerError('ErrImagePull', `failed to pull image "${image}": ${errorMessage(err)}`);
    }
  }
}
