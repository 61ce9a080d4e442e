import { createHash } from 'node:crypto';
import type { Image } from '../src/generated/cri/runtime/v1/Image.js';

/** An image held by the fake runtime. */
export interface FakeImage {
  /** 'sha256:<64 hex>', derived from the name so that runs are reproducible. */
  readonly id: string;
  readonly repoTags: readonly string[];
  readonly repoDigests: readonly string[];
  readonly size: number;
}

const ID_RE = /^sha256:[0-9a-f]{64}$/;

/**
 * Docker's reference normalisation (ParseDockerRef), as containerd applies it
 * before every image lookup: 'busybox' -> 'docker.io/library/busybox:latest',
 * 'quay.io/x/y' -> 'quay.io/x/y:latest'; a digest wins over a tag.
 */
export function normalizeImageRef(ref: string): string {
  let name = ref.trim();
  let digest = '';
  const at = name.indexOf('@');
  if (at >= 0) {
    digest = name.slice(at);
    name = name.slice(0, at);
  }
  let tag = '';
  const colon = name.lastIndexOf(':');
  if (colon > name.lastIndexOf('/')) {
    tag = name.slice(colon);
    name = name.slice(0, colon);
  }
  const slash = name.indexOf('/');
  const first = slash >= 0 ? name.slice(0, slash) : '';
  let domain = 'docker.io';
  let path = name;
  if (slash >= 0 && (first.includes('.') || first.includes(':') || first === 'localhost')) {
    domain = first;
    path = name.slice(slash + 1);
  }
  if (domain === 'docker.io' && !path.includes('/')) path = `library/${path}`;
  if (digest) return `${domain}/${path}${digest}`;
  return `${domain}/${path}${tag || ':latest'}`;
}

function sha256Hex(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** The repository part of a normalised reference (no tag, no digest). */
function repository(normalized: string): string {
  const at = normalized.indexOf('@');
  if (at >= 0) return normalized.slice(0, at);
  const colon = normalized.lastIndexOf(':');
  return colon > normalized.lastIndexOf('/') ? normalized.slice(0, colon) : normalized;
}

interface ImageRecord {
  id: string;
  repoTags: string[];
  repoDigests: string[];
  size: number;
}

/** Images by id and by every reference (tag or digest) that names them. */
export class ImageStore {
  private readonly byId = new Map<string, ImageRecord>();
  private readonly byRef = new Map<string, ImageRecord>();

  /** Adds the image a reference names (idempotent); returns it. */
  add(ref: string): FakeImage {
    const normalized = normalizeImageRef(ref);
    const existing = this.byRef.get(normalized);
    if (existing) return existing;
    const isDigest = normalized.includes('@');
    const id = `sha256:${sha256Hex(`fake-image:${normalized}`)}`;
    let image = this.byId.get(id);
    if (!image) {
      // Registry-pulled images carry a repo digest; containerd reports it as a container's imageRef.
      const digestRef = isDigest ? normalized : `${repository(normalized)}@sha256:${sha256Hex(`fake-manifest:${normalized}`)}`;
      image = { id, repoTags: [], repoDigests: [digestRef], size: 2_000_000 + (parseInt(id.slice(7, 12), 16) % 2_000_000) };
      this.byId.set(id, image);
      this.byRef.set(digestRef, image);
    }
    if (!isDigest) image.repoTags.push(normalized);
    this.byRef.set(normalized, image);
    return image;
  }

  /** containerd's localResolve: an image id, or any reference after normalisation. */
  resolve(refOrId: string): FakeImage | undefined {
    if (!refOrId) return undefined;
    if (ID_RE.test(refOrId)) return this.byId.get(refOrId);
    return this.byRef.get(normalizeImageRef(refOrId));
  }

  /** Drops one tag; the image goes when no tag is left. */
  removeRef(ref: string): void {
    const normalized = normalizeImageRef(ref);
    const image = this.byRef.get(normalized);
    if (!image) return;
    this.byRef.delete(normalized);
    image.repoTags = image.repoTags.filter((t) => t !== normalized);
    if (image.repoTags.length === 0) this.remove(image.id);
  }

  /** Removes an image with every reference to it (what RemoveImage does). */
  remove(id: string): void {
    const image = this.byId.get(id);
    if (!image) return;
    this.byId.delete(id);
    for (const ref of [...image.repoTags, ...image.repoDigests]) this.byRef.delete(ref);
  }

  list(): FakeImage[] {
    return [...this.byId.values()];
  }

  first(): FakeImage | undefined {
    return this.byId.values().next().value;
  }

  totalSize(): number {
    let sum = 0;
    for (const image of this.byId.values()) sum += image.size;
    return sum;
  }
}

/** The CRI Image message for an image (containerd leaves spec and uid unset for images without a USER). */
export function toCriImage(image: FakeImage): Image {
  return {
    id: image.id,
    repoTags: [...image.repoTags],
    repoDigests: [...image.repoDigests],
    size: image.size,
    username: '',
    pinned: false,
  };
}
