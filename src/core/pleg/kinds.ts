/**
 * generic: relist; evented: CRI GetContainerEvents; containerd: containerd's event service;
 * auto: CRI events, else (on containerd) containerd's events, else relist.
 * Their own module: the --pleg flags list them, and declaring a flag loads no PLEG.
 */
export type PlegKind = 'generic' | 'evented' | 'containerd' | 'auto';
export const PLEG_KINDS: readonly PlegKind[] = ['generic', 'evented', 'containerd', 'auto'];
