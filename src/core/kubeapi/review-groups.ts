import type { KubeUser } from './auth.js';
import type { ObjectBody } from './request.js';
import type { ExtraGroup } from './routes.js';
import { PROTOBUF_CONTENT_TYPE } from './protobuf.js';
import { badRequest } from './status.js';

/**
 * The review APIs clients ask before they act: `kubectl auth can-i` (and `--list`), `kubectl auth whoami`, and the
 * permission checks of dashboards. The node authorizes nothing beyond authentication (every user its credentials let
 * in is its admin), so each review answers that truthfully: allowed, every rule, and who the request came as.
 */
const ALLOWED_REASON = 'podctl: every user this node authenticates may do everything on it';

/** The spec of a JSON review, echoed as the API server echoes it; a protobuf one's is not decoded here. */
function specOf(body: ObjectBody): Record<string, unknown> {
  if (body.contentType === PROTOBUF_CONTENT_TYPE || !body.text.trim()) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.text);
  } catch (err) {
    throw badRequest(`the request body is not JSON: ${(err as Error).message}`);
  }
  const spec = (parsed as { spec?: unknown } | null)?.spec;
  return spec && typeof spec === 'object' && !Array.isArray(spec) ? (spec as Record<string, unknown>) : {};
}

const review = (apiVersion: string, kind: string, spec: Record<string, unknown> | undefined, status: Record<string, unknown>) => ({
  code: 201,
  object: { kind, apiVersion, metadata: { creationTimestamp: null }, ...(spec ? { spec } : {}), status },
});

export function reviewGroups(): ExtraGroup[] {
  const authorization = 'authorization.k8s.io';
  const authentication = 'authentication.k8s.io';
  const createOnly = (name: string, kind: string) => ({ name, singularName: '', kind, namespaced: false, verbs: ['create'] });
  return [
    {
      group: authorization,
      version: 'v1',
      resources: [
        createOnly('selfsubjectaccessreviews', 'SelfSubjectAccessReview'),
        createOnly('selfsubjectrulesreviews', 'SelfSubjectRulesReview'),
      ],
      async create(path, body) {
        if (path.resource === 'selfsubjectaccessreviews')
          return review(`${authorization}/v1`, 'SelfSubjectAccessReview', specOf(body), { allowed: true, reason: ALLOWED_REASON });
        return review(`${authorization}/v1`, 'SelfSubjectRulesReview', specOf(body), {
          resourceRules: [{ verbs: ['*'], apiGroups: ['*'], resources: ['*'] }],
          nonResourceRules: [{ verbs: ['*'], nonResourceURLs: ['*'] }],
          incomplete: false,
        });
      },
    },
    {
      group: authentication,
      version: 'v1',
      resources: [createOnly('selfsubjectreviews', 'SelfSubjectReview')],
      async create(_path, _body, user: KubeUser) {
        const groups = [...user.groups.filter((g) => g !== 'system:authenticated'), 'system:authenticated'];
        return review(`${authentication}/v1`, 'SelfSubjectReview', undefined, { userInfo: { username: user.user, groups } });
      },
    },
  ];
}
