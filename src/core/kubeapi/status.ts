/** A cause of a Status: which field, and why (metav1.StatusCause). */
export interface StatusCause {
  reason?: string;
  message?: string;
  field?: string;
}

/** metav1.StatusDetails: the object a Status is about, and its causes. */
export interface StatusDetails {
  name?: string;
  group?: string;
  kind?: string;
  uid?: string;
  causes?: StatusCause[];
  retryAfterSeconds?: number;
}

/**
 * A refusal answered as the API server answers one: a metav1.Status with its code, reason and
 * message, so that kubectl prints `Error from server (NotFound): pods "x" not found`.
 */
export class KubeStatusError extends Error {
  constructor(
    readonly code: number,
    readonly reason: string,
    message: string,
    readonly details?: StatusDetails,
  ) {
    super(message);
  }

  toStatus(): Record<string, unknown> {
    return {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: this.message,
      reason: this.reason,
      ...(this.details ? { details: this.details } : {}),
      code: this.code,
    };
  }
}

/** The API server's wording for a resource that is not there (`pods "x" not found`). */
export const notFound = (resource: string, name: string, group = ''): KubeStatusError =>
  new KubeStatusError(404, 'NotFound', `${qualified(resource, group)} "${name}" not found`, {
    name,
    ...(group ? { group } : {}),
    kind: resource,
  });

export const alreadyExists = (resource: string, name: string): KubeStatusError =>
  new KubeStatusError(409, 'AlreadyExists', `${resource} "${name}" already exists`, { name, kind: resource });

/** An update from a stale resourceVersion, as the API server's optimistic concurrency refuses it. */
export const conflict = (resource: string, name: string, why: string): KubeStatusError =>
  new KubeStatusError(409, 'Conflict', `Operation cannot be fulfilled on ${resource} "${name}": ${why}`, { name, kind: resource });

export const badRequest = (message: string): KubeStatusError => new KubeStatusError(400, 'BadRequest', message);

/** 422 Invalid: `Pod "x" is invalid: spec.containers[0].image: Required value`, each cause a field. */
export function invalid(kind: string, name: string, causes: { field: string; message: string; reason?: string }[]): KubeStatusError {
  const text = causes.map((c) => `${c.field}: ${c.message}`);
  const message = `${kind} "${name}" is invalid: ${text.length > 1 ? `[${text.join(', ')}]` : (text[0] ?? '')}`;
  return new KubeStatusError(422, 'Invalid', message, {
    name,
    kind,
    causes: causes.map((c) => ({ reason: c.reason ?? 'FieldValueInvalid', message: c.message, field: c.field })),
  });
}

export const methodNotAllowed = (message = 'the server does not allow this method on the requested resource'): KubeStatusError =>
  new KubeStatusError(405, 'MethodNotAllowed', message);

/** Why a write of a Service is refused: the node runs pods, with no Service proxy to route one. */
export const SERVICES_NOT_KEPT =
  'this node keeps no Services: podctl runs pods, with no Service proxy or cluster IPs; reach a pod at its IP, a hostPort, ' +
  'or kubectl port-forward';

function qualified(resource: string, group: string): string {
  return group ? `${resource}.${group}` : resource;
}
