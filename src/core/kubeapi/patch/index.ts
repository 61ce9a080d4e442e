/**
 * PATCH bodies by their Content-Type, as the API server takes them: strategic merge, JSON merge and JSON patch.
 * Server-side apply (application/apply-patch+yaml) is patch/apply.ts's; the router sends it there first.
 */
import { KubeStatusError } from '../status.js';
import { badRequest, goJsonKind, goJsonSyntaxError } from './errors.js';
import { jsonPatch } from './json.js';
import { jsonMergePatch } from './merge.js';
import { strategicMergePatch } from './strategic.js';

export { jsonPatch, MAX_JSON_PATCH_OPERATIONS } from './json.js';
export { jsonMergePatch } from './merge.js';
export { strategicMergePatch } from './strategic.js';

export const STRATEGIC_MERGE_PATCH = 'application/strategic-merge-patch+json';
export const MERGE_PATCH = 'application/merge-patch+json';
export const JSON_PATCH = 'application/json-patch+json';
export const APPLY_PATCH = 'application/apply-patch+yaml';

/** The patch types the API server accepts for the built-in kinds, in the order its 415 lists them. */
export const PATCH_CONTENT_TYPES = [JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH, APPLY_PATCH];

/** A Content-Type header's media type, without parameters ("; charset=utf-8"). */
export function patchType(contentType: string | undefined): string {
  const type = contentType ?? '';
  const semi = type.indexOf(';');
  return (semi > 0 ? type.slice(0, semi) : type).trim();
}

/** The API server's answer to a PATCH whose Content-Type is none of `accepted`. */
export function unsupportedPatchType(accepted: readonly string[] = PATCH_CONTENT_TYPES): KubeStatusError {
  return new KubeStatusError(
    415,
    'UnsupportedMediaType',
    `the body of the request was in an unknown format - accepted media types include: ${accepted.join(', ')}`,
  );
}

function parse(body: string, errorPrefix: string): unknown {
  try {
    return JSON.parse(body);
  } catch (err) {
    throw badRequest(errorPrefix + goJsonSyntaxError(err, body));
  }
}

/**
 * The object `original` with the PATCH body applied, chosen by `contentType`; `schema` is the kind's OpenAPI
 * definition (io.k8s.api.core.v1.Pod), which the strategic merge patch reads. `original` is not changed. Errors
 * are the API server's Statuses (KubeStatusError): 400 for a body that does not decode, 415 for another type.
 */
export function applyPatch(contentType: string | undefined, original: object, patchBody: string, schema: string): Record<string, unknown> {
  const type = patchType(contentType);
  let result: unknown;
  switch (type) {
    case STRATEGIC_MERGE_PATCH: {
      const patch = parse(patchBody, '');
      if (patch === null) return structuredClone(original) as Record<string, unknown>;
      if (typeof patch !== 'object' || Array.isArray(patch)) {
        throw badRequest(`json: cannot unmarshal ${goJsonKind(patch)} into Go value of type map[string]interface {}`);
      }
      return strategicMergePatch(original, patch, schema);
    }
    case MERGE_PATCH: {
      const patch = parse(patchBody, 'error decoding patch: ');
      if (patch === null) throw badRequest('Invalid JSON Patch');
      if (typeof patch !== 'object' || Array.isArray(patch)) {
        throw badRequest(`error decoding patch: json: cannot unmarshal ${goJsonKind(patch)} into Go value of type map[string]interface {}`);
      }
      result = jsonMergePatch(original, patch);
      break;
    }
    case JSON_PATCH:
      result = jsonPatch(original, parse(patchBody, 'error decoding patch: '));
      break;
    default:
      throw unsupportedPatchType();
  }
  if (typeof result !== 'object' || result === null || Array.isArray(result)) {
    // The patched document must still decode as the kind.
    throw new KubeStatusError(422, 'Invalid', `json: cannot unmarshal ${goJsonKind(result)} into Go value of type map[string]interface {}`);
  }
  return result as Record<string, unknown>;
}
