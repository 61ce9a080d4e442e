import protobuf from 'protobufjs/minimal.js';
import type * as T from './types.js';
import { intern } from '../util/intern.js';
import { containerStates, podSandboxStates, summaryFields as F } from '../../generated/cri/cri-meta.js';

/**
 * ListPodSandbox and ListContainers answers decoded without annotations or
 * image specs. A relist compares ids, states and labels only, and at
 * thousands of pods the annotations (specs, hashes, preStop handlers) are most
 * of the bytes: the generic decoder spent over half of every relist on them.
 * Field numbers are read from runtime/v1/api.proto at build time (scripts/gen-cri-types.mjs,
 * which checks each field's type against what is read here).
 */
type PodSandboxSummary = T.PodSandboxSummary;
type ContainerSummary = T.ContainerSummary;

const { Reader, util } = protobuf;
type ProtoReader = protobuf.Reader;

const WIRE_VARINT = 0;
const WIRE_LENGTH = 2;

const SANDBOX_STATES: readonly T.PodSandboxState[] = podSandboxStates;
const CONTAINER_STATES: readonly T.ContainerState[] = containerStates;

/** Nanosecond timestamps exceed 2^53; like the generic decoder (longs: Number), precision past that is dropped. */
function int64(r: ProtoReader): number {
  const v = r.int64() as unknown;
  if (typeof v === 'number') return v;
  const { low, high } = v as { low: number; high: number };
  return new util.LongBits(low >>> 0, high >>> 0).toNumber(false);
}

/** A map<string, string> entry, added to `into`. */
function mapEntry(r: ProtoReader, into: Record<string, string>): void {
  const end = r.uint32() + r.pos;
  let key = '';
  let value = '';
  while (r.pos < end) {
    const tag = r.uint32();
    if (tag >>> 3 === 1 && (tag & 7) === WIRE_LENGTH) key = r.string();
    else if (tag >>> 3 === 2 && (tag & 7) === WIRE_LENGTH) value = intern(r.string());
    else r.skipType(tag & 7);
  }
  into[key] = value;
}

/** Reads a length-delimited submessage with `field`, skipping unknown fields. */
function message<M>(r: ProtoReader, init: M, field: (r: ProtoReader, m: M, no: number, wire: number) => boolean): M {
  const end = r.uint32() + r.pos;
  while (r.pos < end) {
    const tag = r.uint32();
    if (!field(r, init, tag >>> 3, tag & 7)) r.skipType(tag & 7);
  }
  return init;
}

function enumName<E>(names: readonly E[], n: number): E {
  return names[n] ?? (String(n) as E);
}

function sandbox(r: ProtoReader): PodSandboxSummary {
  return message<PodSandboxSummary>(
    r,
    { id: '', metadata: null, state: 'SANDBOX_READY', createdAt: 0, labels: {}, runtimeHandler: '' },
    (r, s, no, wire) => {
      if (no === F.PodSandbox.id && wire === WIRE_LENGTH) s.id = intern(r.string());
      else if (no === F.PodSandbox.metadata && wire === WIRE_LENGTH)
        s.metadata = message<T.PodSandboxMetadata>(r, { name: '', uid: '', namespace: '', attempt: 0 }, (r, m, no, wire) => {
          if (no === F.PodSandboxMetadata.name && wire === WIRE_LENGTH) m.name = intern(r.string());
          else if (no === F.PodSandboxMetadata.uid && wire === WIRE_LENGTH) m.uid = intern(r.string());
          else if (no === F.PodSandboxMetadata.namespace && wire === WIRE_LENGTH) m.namespace = intern(r.string());
          else if (no === F.PodSandboxMetadata.attempt && wire === WIRE_VARINT) m.attempt = r.uint32();
          else return false;
          return true;
        });
      else if (no === F.PodSandbox.state && wire === WIRE_VARINT) s.state = enumName(SANDBOX_STATES, r.int32());
      else if (no === F.PodSandbox.createdAt && wire === WIRE_VARINT) s.createdAt = int64(r);
      else if (no === F.PodSandbox.labels && wire === WIRE_LENGTH) mapEntry(r, s.labels);
      else if (no === F.PodSandbox.runtimeHandler && wire === WIRE_LENGTH) s.runtimeHandler = intern(r.string());
      else return false;
      return true;
    },
  );
}

function container(r: ProtoReader): ContainerSummary {
  return message<ContainerSummary>(
    r,
    { id: '', podSandboxId: '', metadata: null, imageRef: '', state: 'CONTAINER_CREATED', createdAt: 0, labels: {}, imageId: '' },
    (r, c, no, wire) => {
      if (no === F.Container.id && wire === WIRE_LENGTH) c.id = intern(r.string());
      else if (no === F.Container.podSandboxId && wire === WIRE_LENGTH) c.podSandboxId = intern(r.string());
      else if (no === F.Container.metadata && wire === WIRE_LENGTH)
        c.metadata = message<T.ContainerMetadata>(r, { name: '', attempt: 0 }, (r, m, no, wire) => {
          if (no === F.ContainerMetadata.name && wire === WIRE_LENGTH) m.name = intern(r.string());
          else if (no === F.ContainerMetadata.attempt && wire === WIRE_VARINT) m.attempt = r.uint32();
          else return false;
          return true;
        });
      else if (no === F.Container.imageRef && wire === WIRE_LENGTH) c.imageRef = intern(r.string());
      else if (no === F.Container.state && wire === WIRE_VARINT) c.state = enumName(CONTAINER_STATES, r.int32());
      else if (no === F.Container.createdAt && wire === WIRE_VARINT) c.createdAt = int64(r);
      else if (no === F.Container.labels && wire === WIRE_LENGTH) mapEntry(r, c.labels);
      else if (no === F.Container.imageId && wire === WIRE_LENGTH) c.imageId = intern(r.string());
      else return false;
      return true;
    },
  );
}

/** A list response's repeated field and its items' id field, with the item's decoder. */
interface ListShape<I> {
  item: (r: ProtoReader) => I;
  /** The tag of the response's repeated field (length-delimited). */
  listTag: number;
  /** The tag of an item's id (a string). */
  idTag: number;
}

const lengthTag = (field: number) => (field << 3) | WIRE_LENGTH;

const SANDBOXES: ListShape<PodSandboxSummary> = {
  item: sandbox,
  listTag: lengthTag(F.ListPodSandboxResponse.items),
  idTag: lengthTag(F.PodSandbox.id),
};
const CONTAINERS: ListShape<ContainerSummary> = {
  item: container,
  listTag: lengthTag(F.ListContainersResponse.containers),
  idTag: lengthTag(F.Container.id),
};

/** A whole response: its repeated field of items. */
function list<I>(buf: Uint8Array, { item, listTag }: ListShape<I>): I[] {
  const r = Reader.create(buf);
  const out: I[] = [];
  while (r.pos < r.len) {
    const tag = r.uint32();
    if (tag === listTag) out.push(item(r));
    else r.skipType(tag & 7);
  }
  return out;
}

/** One record of the last answer: its summary, and a copy of its bytes. */
interface Remembered<S> {
  summary: S;
  bytes: Buffer;
  /** The decode that last saw it. */
  gen: number;
}

/**
 * A record's bytes in a buffer of their own, so that the answer is not kept past its decode: kept
 * for the second until the next relist, every answer (megabytes at thousands of pods) outlived the
 * young generation and waited in the old one for a full GC. Unpooled, so that one long-lived record
 * never pins a pool slab.
 */
function copyOf(buf: Buffer, start: number, end: number): Buffer {
  const out = Buffer.allocUnsafeSlow(end - start);
  buf.copy(out, 0, start, end);
  return out;
}

/** The id of the record from r.pos to end, or undefined; r.pos is left anywhere. */
function recordId(r: ProtoReader, end: number, idTag: number): string | undefined {
  while (r.pos < end) {
    const tag = r.uint32();
    if (tag === idTag) return r.string();
    r.skipType(tag & 7);
  }
  return undefined;
}

/**
 * A list decoder that remembers the last answer's records by id with their bytes: a record whose
 * bytes are the same as last time is the summary decoded then (the same object), so a relist at
 * 10,000 containers decodes only the few that changed instead of every label string of every
 * record, most of its CPU and of the garbage it left. Nothing is assumed of the runtime: any byte
 * changed in a record (its state, a label) decodes it afresh. Summaries are shared between
 * answers and must not be modified. Each record's bytes are copied when first seen or changed,
 * never the answer; the entries are updated in place (no map or entry allocated per record per
 * answer).
 */
export class SummaryDecoder<S extends { id: string }> {
  private readonly last = new Map<string, Remembered<S>>();
  private gen = 0;
  /** Records reused from the previous answer in the last decode (tests and benchmarks). */
  reused = 0;

  constructor(private readonly shape: ListShape<S>) {}

  decode(buf: Buffer): S[] {
    const gen = ++this.gen;
    const r = Reader.create(buf);
    const out: S[] = [];
    let reused = 0;
    let seen = 0;
    while (r.pos < r.len) {
      const tag = r.uint32();
      if (tag !== this.shape.listTag) {
        r.skipType(tag & 7);
        continue;
      }
      const at = r.pos;
      const end = r.uint32() + r.pos;
      const start = r.pos;
      const id = recordId(r, end, this.shape.idTag);
      const entry = id === undefined ? undefined : this.last.get(id);
      let summary: S;
      const same =
        entry !== undefined &&
        entry.gen !== gen &&
        entry.bytes.length === end - start &&
        buf.compare(entry.bytes, 0, entry.bytes.length, start, end) === 0;
      if (same) {
        summary = entry.summary;
        reused++;
        r.pos = end;
      } else {
        r.pos = at;
        summary = this.shape.item(r);
      }
      out.push(summary);
      if (entry) {
        if (entry.gen !== gen) seen++;
        if (!same) {
          entry.summary = summary;
          entry.bytes = copyOf(buf, start, end);
        }
        entry.gen = gen;
      } else if (id !== undefined) {
        this.last.set(id, { summary, bytes: copyOf(buf, start, end), gen });
        seen++;
      }
    }
    // Records gone from this answer are forgotten (and the older answers' bytes with them).
    if (this.last.size > seen) for (const [id, e] of this.last) if (e.gen !== gen) this.last.delete(id);
    this.reused = reused;
    return out;
  }
}

/** A decoder of ListPodSandbox answers that reuses unchanged records (see SummaryDecoder). */
export function podSandboxSummaryDecoder(): SummaryDecoder<PodSandboxSummary> {
  return new SummaryDecoder(SANDBOXES);
}

/** A decoder of ListContainers answers that reuses unchanged records (see SummaryDecoder). */
export function containerSummaryDecoder(): SummaryDecoder<ContainerSummary> {
  return new SummaryDecoder(CONTAINERS);
}

/** Decodes a ListPodSandboxResponse into summaries. */
export function decodePodSandboxSummaries(buf: Uint8Array): PodSandboxSummary[] {
  return list(buf, SANDBOXES);
}

/** Decodes a ListContainersResponse into summaries. */
export function decodeContainerSummaries(buf: Uint8Array): ContainerSummary[] {
  return list(buf, CONTAINERS);
}
