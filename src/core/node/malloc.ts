/**
 * The size up to which large buffers come from malloc's heap instead of their own mappings, once
 * raiseMallocThresholds() has run: above a relist's answers at 5,000 pods (about 3 and 9 MB).
 */
export const LARGE_BUFFER_BYTES = 16 * 1024 * 1024;

let raised = false;

/**
 * Makes glibc's malloc keep large buffers in its heap, in a process that runs for long.
 *
 * Node takes every buffer above 4 KB from malloc, and glibc maps a block above its mmap threshold
 * (128 KB at start) afresh and unmaps it when freed. Each relist's list answers (grpc-js joins each
 * into one buffer) then faults in new pages, which on a VM cost more than decoding them: about
 * 15 µs a page on this project's machines, 35 ms for a 9 MB answer.
 *
 * glibc raises the threshold to the size of a mapped block when one is freed (mallopt(3): the
 * dynamic mmap threshold), and its trim threshold to twice that. So one block of
 * LARGE_BUFFER_BYTES, taken and dropped here, makes later buffers up to that size come from the
 * heap, whose pages are reused, once V8 frees it at its next GC. The block is never touched and
 * costs no RSS. A threshold set by the user (GLIBC_TUNABLES, MALLOC_MMAP_THRESHOLD_) turns the
 * dynamic one off and stands; other C libraries ignore the block.
 */
export function raiseMallocThresholds(): boolean {
  if (raised) return false;
  raised = true;
  // allocUnsafeSlow: its own block, not zero-filled (calloc would touch it).
  Buffer.allocUnsafeSlow(LARGE_BUFFER_BYTES);
  return true;
}
