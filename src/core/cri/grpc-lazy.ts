import type * as Grpc from '@grpc/grpc-js';

/**
 * grpc-js, imported when first needed. It is CommonJS: Node's import() gives its exports both
 * named and as the default, the bundle's chunk only as the default, so the default is what is read.
 */
export async function loadGrpc(): Promise<typeof Grpc> {
  const m = (await import('@grpc/grpc-js')) as typeof Grpc & { default?: typeof Grpc };
  return m.default ?? m;
}
