import { PodctlError } from '../errors.js';

/**
 * gRPC's status codes (fixed by the gRPC spec), kept here so that what only
 * branches on a CRI error's code does not load grpc-js: a command that never
 * calls the runtime never pays for it.
 */
export const GrpcStatus = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  ABORTED: 10,
  OUT_OF_RANGE: 11,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  DATA_LOSS: 15,
  UNAUTHENTICATED: 16,
} as const;
export type GrpcStatus = (typeof GrpcStatus)[keyof typeof GrpcStatus];

/** A failed CRI call, with the gRPC code kept so the core can branch on it. */
export class CriError extends PodctlError {
  readonly code: GrpcStatus;
  readonly method: string;
  readonly endpoint: string;
  /** The runtime's own message, unchanged. */
  readonly details: string;

  constructor(
    message: string,
    opts: { code: GrpcStatus; method: string; endpoint: string; details: string; hint?: string; cause?: unknown },
  ) {
    super(message, { hint: opts.hint, cause: opts.cause });
    this.name = 'CriError';
    this.code = opts.code;
    this.method = opts.method;
    this.endpoint = opts.endpoint;
    this.details = opts.details;
  }
}

export function isCriError(err: unknown, code?: GrpcStatus): err is CriError {
  return err instanceof CriError && (code === undefined || err.code === code);
}

export const isNotFound = (err: unknown): boolean => isCriError(err, GrpcStatus.NOT_FOUND);
/**
 * containerd refuses a RemoveContainer while another caller is removing the same container
 * ("container is already in removing state"): the container is on its way out, as for NOT_FOUND.
 * A delete from the CLI and the agent's own pruning of the dead container can meet that way.
 */
export const isBeingRemoved = (err: unknown): boolean => isCriError(err) && /already in removing state/.test(err.message);

/**
 * Awaits a CRI call whose object may already be gone, or going: NOT_FOUND, or a removal
 * already under way, gives undefined (the CRI's remove and stop calls are idempotent in spirit).
 */
export async function ignoreNotFound<T>(call: Promise<T>): Promise<T | undefined> {
  try {
    return await call;
  } catch (err) {
    if (isNotFound(err) || isBeingRemoved(err)) return undefined;
    throw err;
  }
}

export const isUnimplemented = (err: unknown): boolean => isCriError(err, GrpcStatus.UNIMPLEMENTED);
/** The runtime could not be reached at all (socket gone, refused, runtime down). */
export const isUnavailable = (err: unknown): boolean => isCriError(err, GrpcStatus.UNAVAILABLE);

export function noRuntimeError(endpoint: string, method: string, cause?: unknown): CriError {
  return new CriError(`no CRI runtime at ${endpoint}`, {
    code: GrpcStatus.UNAVAILABLE,
    method,
    endpoint,
    details: cause instanceof Error ? cause.message : 'socket does not exist',
    hint: 'start one with `podctl runtime up` or pass --runtime-endpoint',
    cause,
  });
}

/** A failed gRPC call as grpc-js reports it (a ServiceError), or as the client reports one it ended itself. */
export interface GrpcFailure extends Error {
  code: number;
  details?: string;
}

/** Turns a gRPC failure into one sentence a person understands. */
export function mapGrpcError(err: GrpcFailure, method: string, endpoint: string, timeoutMs: number): CriError {
  const details = err.details || err.message;
  const base = { code: err.code as GrpcStatus, method, endpoint, details, cause: err };
  switch (err.code) {
    case GrpcStatus.UNAVAILABLE:
      if (/EACCES|permission denied/i.test(details)) {
        return new CriError(`permission denied on ${endpoint}`, {
          ...base,
          hint: 'run podctl as root or as a user allowed to use that socket',
        });
      }
      // Only the socket itself missing or refusing; a runtime passing on its own connection error is not that.
      if (/connect (ENOENT|ECONNREFUSED)|No connection established/.test(details)) return noRuntimeError(endpoint, method, err);
      return new CriError(`the runtime at ${endpoint} is unavailable: ${details}`, base);
    case GrpcStatus.UNIMPLEMENTED:
      return new CriError(`the runtime at ${endpoint} does not implement ${method}`, base);
    case GrpcStatus.DEADLINE_EXCEEDED:
      return new CriError(`${method} did not answer within ${formatMs(timeoutMs)} (runtime at ${endpoint})`, {
        ...base,
        hint: method === 'PullImage' ? 'raise --pull-timeout' : 'raise --request-timeout or check the runtime',
      });
    case GrpcStatus.PERMISSION_DENIED:
      return new CriError(`${method}: permission denied by the runtime: ${details}`, base);
    case GrpcStatus.CANCELLED:
      return new CriError(`${method} was cancelled`, base);
    default:
      return new CriError(`${method} failed: ${details}`, base);
  }
}

function formatMs(ms: number): string {
  return ms % 60_000 === 0 ? `${ms / 60_000}m` : ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`;
}
