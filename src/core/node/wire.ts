// The composition root is node/compose.ts; this name stays for the callers that import it.
export { wireNode, type NodeWiring, type WiringOptions } from './compose.js';
