/**
 * The JSON patch (RFC 6902, application/json-patch+json), applied by fast-json-patch. As the API server answers:
 * a body that is no list of operations is a 400, more than 10,000 operations a 413, and an operation that cannot
 * apply (a failed test, a path that is not there, an unknown op) a 422 in its generic words.
 */
import jsonpatch from 'fast-json-patch';
import type { Operation } from 'fast-json-patch';
import { badRequest, goJsonKind, tooLarge, unprocessable } from './errors.js';

/** The API server's limit on the operations of one JSON patch. */
export const MAX_JSON_PATCH_OPERATIONS = 10000;

/** Applies the operations `patch` (decoded JSON) to `original`; neither is changed. */
export function jsonPatch(original: unknown, patch: unknown): unknown {
  if (patch === null) return structuredClone(original);
  if (!Array.isArray(patch)) {
    throw badRequest(`error decoding patch: json: cannot unmarshal ${goJsonKind(patch)} into Go value of type []handlers.jsonPatchOp`);
  }
  for (const op of patch) {
    if (typeof op !== 'object' || op === null || Array.isArray(op)) {
      throw badRequest(`error decoding patch: json: cannot unmarshal ${goJsonKind(op)} into Go value of type handlers.jsonPatchOp`);
    }
  }
  if (patch.length > MAX_JSON_PATCH_OPERATIONS) {
    throw tooLarge(`The allowed maximum operations in a JSON patch is ${MAX_JSON_PATCH_OPERATIONS}, got ${patch.length}`);
  }
  try {
    return jsonpatch.applyPatch(structuredClone(original), patch as Operation[], true, true).newDocument;
  } catch (err) {
    if (err instanceof jsonpatch.JsonPatchError) throw unprocessable();
    throw err;
  }
}
