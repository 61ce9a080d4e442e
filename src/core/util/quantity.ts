const BINARY: Record<string, number> = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60 };
const DECIMAL: Record<string, number> = { n: 1e-9, u: 1e-6, m: 1e-3, '': 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18 };

/**
 * Parses a Kubernetes resource.Quantity ("500m", "1.5", "128Mi", "1e3") into
 * its numeric value; undefined when it is not a quantity.
 */
export function parseQuantity(value: string | number | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value === 'number') return Number.isFinite(value) ? value : undefined;
  const m = /^([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei)|([numkMGTPE]?))$/.exec(value.trim());
  if (!m) return undefined;
  const n = Number(m[1]);
  if (m[2]) return n * 10 ** Number(m[2].slice(1));
  if (m[3]) return n * BINARY[m[3]]!;
  return n * DECIMAL[m[4] ?? '']!;
}

/** CPU in millicores, rounded up as the kubelet's MilliValue. */
export function milliCPU(value: string | number | undefined): number | undefined {
  const v = parseQuantity(value);
  return v === undefined ? undefined : Math.ceil(v * 1000 - 1e-9);
}

/** Memory in bytes, rounded up. */
export function bytes(value: string | number | undefined): number | undefined {
  const v = parseQuantity(value);
  return v === undefined ? undefined : Math.ceil(v - 1e-9);
}
