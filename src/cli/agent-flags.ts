import { Flags } from '@oclif/core';
import { nodeFlags } from './node-flags.js';
import { traceFlags } from './trace-flags.js';

/** Flags of the commands that run the node agent (agent, watch). */
export const agentFlags = {
  ...nodeFlags,
  'manifest-url': Flags.string({ summary: 'Also follow the pods served at this URL.' }),
  'manifest-url-header': Flags.string({ summary: 'HTTP header for --manifest-url, "Name: value" (repeatable).', multiple: true }),
  'file-check-frequency': Flags.string({ summary: 'Safety-net re-read of the manifests path.', default: '20s' }),
  'manifest-url-max-size': Flags.string({
    summary:
      'A --manifest-url body larger than this (a quantity such as 4Mi) is refused and the last good pods kept. ' +
      "Redirects are followed only within the URL's own origin, and the headers never leave it.",
    default: '4Mi',
  }),
  'http-check-frequency': Flags.string({ summary: 'How often --manifest-url is polled.', default: '20s' }),
  'pleg-relist-period': Flags.string({ summary: 'How often the generic PLEG relists the runtime.', default: '1s' }),
  pleg: Flags.string({
    summary:
      "generic: relist; evented: the CRI's event stream (GetContainerEvents); containerd: containerd's own event service; " +
      "both relist every 300 s as a safety net. auto: CRI events, else containerd's events on containerd, else relist.",
    options: ['generic', 'evented', 'containerd', 'auto'],
    default: 'auto',
  }),
  'cleanup-on-exit': Flags.boolean({ summary: 'Terminate the pods on exit instead of leaving them running.' }),
  'kube-api': Flags.boolean({
    summary: 'Serve the Kubernetes API for this node over TLS, so that kubectl and client libraries work (podctl kubeconfig).',
    default: true,
    allowNo: true,
  }),
  'kube-api-port': Flags.integer({
    summary: 'Port of the Kubernetes API; unset: 6443, or a free port when another process has 6443 (the log says which).',
    min: 0,
    max: 65535,
  }),
  'kube-api-address': Flags.string({
    summary: 'Address the Kubernetes API listens on. Anything but loopback exposes the node to the network (a warning says so).',
    default: '127.0.0.1',
  }),
  table: Flags.boolean({ summary: 'On a terminal, a live table of the pods (kubectl get pods columns) instead of one line per change.' }),
  ...traceFlags,
  trace: Flags.boolean({ ...traceFlags.trace, exclusive: ['table'] }),
};
