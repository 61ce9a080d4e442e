import { isLabelValue, qualifiedNameProblem } from './names.js';
import { isObject, type FieldProblem } from './schema.js';

/** The API server's TotalAnnotationSizeLimitB: keys and values of metadata.annotations together. */
export const TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024;

/** The API server's MaxSecretSize, which bounds a ConfigMap's values too. */
export const MAX_DATA_BYTES = 1024 * 1024;

/**
 * The API server's ValidateObjectMeta of labels and annotations, for every kind: qualified-name keys, label values
 * of at most 63 characters, and annotations of at most 256 KiB together. The labels are walked once, whatever their number.
 */
export function metadataRules(doc: Record<string, unknown>): FieldProblem[] {
  const problems: FieldProblem[] = [];
  const err = (field: string, message: string) => problems.push({ field, message, severity: 'error' });
  const meta = isObject(doc.metadata) ? (doc.metadata as { labels?: unknown; annotations?: unknown }) : {};
  if (isObject(meta.labels)) {
    for (const [k, v] of Object.entries(meta.labels as Record<string, unknown>)) {
      const p = qualifiedNameProblem(k);
      if (p) err(`metadata.labels[${JSON.stringify(k)}]`, `invalid label key: ${p}`);
      if (typeof v === 'string' && !isLabelValue(v))
        err(
          `metadata.labels[${JSON.stringify(k)}]`,
          `invalid label value ${JSON.stringify(v.length > 80 ? `${v.slice(0, 60)}...` : v)}` +
            `${v.length > 63 ? ` (${v.length} characters)` : ''}: ` +
            `expected at most 63 alphanumeric characters, "-", "_" or ".", starting and ending with an alphanumeric character`,
        );
    }
  }
  if (isObject(meta.annotations)) {
    let annotationBytes = 0;
    for (const [k, v] of Object.entries(meta.annotations as Record<string, unknown>)) {
      const p = qualifiedNameProblem(k);
      if (p) err(`metadata.annotations[${JSON.stringify(k)}]`, `invalid annotation key: ${p}`);
      annotationBytes += Buffer.byteLength(k) + (typeof v === 'string' ? Buffer.byteLength(v) : 0);
    }
    if (annotationBytes > TOTAL_ANNOTATION_SIZE_LIMIT) {
      err(
        'metadata.annotations',
        `too long: ${annotationBytes} bytes in total (keys and values); expected ` +
          `at most ${TOTAL_ANNOTATION_SIZE_LIMIT} bytes (256 KiB), as the API server`,
      );
    }
  }
  return problems;
}

/** The bytes a base64 text decodes to. */
const base64Bytes = (v: string) => Math.floor((v.length * 3) / 4) - (v.endsWith('==') ? 2 : v.endsWith('=') ? 1 : 0);

/** The API server's ValidateConfigMap and ValidateSecret size rule: the values together at most MaxSecretSize (1 MiB). */
export function dataSizeRules(kind: 'ConfigMap' | 'Secret', doc: Record<string, unknown>): FieldProblem[] {
  const sizes = new Map<string, number>();
  const add = (field: string, bytes: (v: string) => number) => {
    const values = doc[field];
    if (!isObject(values)) return;
    for (const [k, v] of Object.entries(values as Record<string, unknown>))
      if (typeof v === 'string') sizes.set(`${field === 'binaryData' ? 'b:' : ''}${k}`, bytes(v));
  };
  if (kind === 'ConfigMap') {
    add('data', (v) => Buffer.byteLength(v));
    add('binaryData', base64Bytes);
  } else {
    // stringData is merged into data (its key wins) before the API server validates.
    add('data', base64Bytes);
    add('stringData', (v) => Buffer.byteLength(v));
  }
  let total = 0;
  for (const bytes of sizes.values()) total += bytes;
  if (total <= MAX_DATA_BYTES) return [];
  const fields = kind === 'ConfigMap' ? 'data and binaryData' : 'data and stringData';
  return [
    {
      field: 'data',
      message:
        `too long: the ${kind}'s values (${fields}) are ${total} bytes together; ` +
        `expected at most ${MAX_DATA_BYTES} bytes (1 MiB), as the API server`,
      severity: 'error',
    },
  ];
}
