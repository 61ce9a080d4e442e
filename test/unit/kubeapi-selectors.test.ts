import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { parseFieldSelector, parseLabelSelector } from '../../src/core/kubeapi/selectors.js';
import { KubeStatusError } from '../../src/core/kubeapi/status.js';

/** The 400 BadRequest a selector gets, and its message. */
function badRequest(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof KubeStatusError, `expected a KubeStatusError, got ${String(e)}`);
    assert.equal(e.code, 400);
    assert.equal(e.reason, 'BadRequest');
    return e.message;
  }
  assert.fail('expected the selector to be refused');
}

const QNAME_REGEX_ERROR =
  "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

describe('label selectors', () => {
  const labels = { app: 'web', tier: 'front', version: '3' };
  const cases: [string, Record<string, string> | undefined, boolean][] = [
    ['', undefined, true],
    ['app=web', labels, true],
    ['app==web', labels, true],
    ['app=db', labels, false],
    ['app!=db', labels, true],
    ['app!=web', labels, false],
    ['missing!=x', labels, true],
    ['app in (db,web)', labels, true],
    ['app in (db)', labels, false],
    ['app notin (db)', labels, true],
    ['app notin (web)', labels, false],
    ['missing notin (web)', labels, true],
    ['app', labels, true],
    ['missing', labels, false],
    ['!missing', labels, true],
    ['!app', labels, false],
    ['app=web,tier=front', labels, true],
    [' app = web ,  tier in ( front , back ) ', labels, true],
    ['app=web,tier=back', labels, false],
    ['version>2', labels, true],
    ['version<3', labels, false],
    ['app>2', labels, false],
    ['app=', { app: '' }, true],
    ['app=', labels, false],
    ['app in ()', { app: '' }, true],
    ['app in (,web)', { app: '' }, true],
    ['in in (in)', { in: 'in' }, true],
    ['example.com/role=db', { 'example.com/role': 'db' }, true],
    ['app', undefined, false],
    ['!app', undefined, true],
  ];
  for (const [selector, set, want] of cases) {
    test(`${JSON.stringify(selector)} on ${JSON.stringify(set)}: ${want}`, () => {
      assert.equal(parseLabelSelector(selector)(set), want);
    });
  }

  test('syntax errors: 400 BadRequest with the API server message', () => {
    assert.equal(
      badRequest(() => parseLabelSelector('a b')),
      "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt",
    );
    assert.equal(
      badRequest(() => parseLabelSelector('a in x')),
      "unable to parse requirement: found 'x' expected: '('",
    );
    assert.equal(
      badRequest(() => parseLabelSelector('a in (x')),
      "unable to parse requirement: found '', expected: ',' or ')'",
    );
    assert.equal(
      badRequest(() => parseLabelSelector('=a')),
      "found '=', expected: !, identifier, or 'end of string'",
    );
    assert.equal(
      badRequest(() => parseLabelSelector('a=b,')),
      "found '', expected: identifier after ','",
    );
    assert.equal(
      badRequest(() => parseLabelSelector('a=b c')),
      "found 'c', expected: ',' or 'end of string'",
    );
    assert.equal(
      badRequest(() => parseLabelSelector('!a=b')),
      "found '=', expected: ',' or 'end of string'",
    );
    assert.equal(
      badRequest(() => parseLabelSelector('a=(b)')),
      "unable to parse requirement: found '(', expected: identifier",
    );
  });

  test('invalid keys and values: the field errors as the API server prints them', () => {
    assert.equal(
      badRequest(() => parseLabelSelector('a$b=c')),
      `unable to parse requirement: <nil>: Invalid value: "a$b": name part ${QNAME_REGEX_ERROR}`,
    );
    assert.equal(
      badRequest(() => parseLabelSelector('a/b/c')),
      `unable to parse requirement: <nil>: Invalid value: "a/b/c": a qualified name ${QNAME_REGEX_ERROR} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`,
    );
    assert.equal(
      badRequest(() => parseLabelSelector('/a')),
      'unable to parse requirement: <nil>: Invalid value: "/a": prefix part must be non-empty',
    );
    assert.equal(
      badRequest(() => parseLabelSelector(`${'k'.repeat(64)}=v`)),
      `unable to parse requirement: <nil>: Invalid value: "${'k'.repeat(64)}": name part must be no more than 63 characters`,
    );
    assert.equal(
      badRequest(() => parseLabelSelector('app=-x')),
      `unable to parse requirement: values[0][app]: Invalid value: "-x": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`,
    );
    assert.equal(
      badRequest(() => parseLabelSelector('n>x')),
      `unable to parse requirement: values[0]: Invalid value: "x": for 'Gt', 'Lt' operators, the value must be an integer`,
    );
    // Several errors in one requirement: bracketed, as Go prints an aggregate.
    assert.match(
      badRequest(() => parseLabelSelector('a in (-x,-y)')),
      /^unable to parse requirement: \[values\[0\]\[a\]: .*, values\[1\]\[a\]: .*\]$/,
    );
  });
});

describe('field selectors', () => {
  const pod = {
    metadata: { name: 'web', namespace: 'default' },
    spec: { nodeName: 'node-1', restartPolicy: 'Always', hostNetwork: true },
    status: { phase: 'Running', podIPs: [{ ip: '10.0.0.5' }] },
  };

  test('pods: the supported fields, =, == and !=, comma-joined', () => {
    const m = (s: string) => parseFieldSelector(s, 'pods')(pod);
    assert.equal(m(''), true);
    assert.equal(m('metadata.name=web'), true);
    assert.equal(m('metadata.name==web,metadata.namespace=default'), true);
    assert.equal(m('metadata.namespace!=default'), false);
    assert.equal(m('status.phase=Running,spec.nodeName=node-1'), true);
    assert.equal(m('status.phase!=Running'), false);
    assert.equal(m('spec.hostNetwork=true'), true);
    assert.equal(m('status.podIP=10.0.0.5'), true);
    assert.equal(m('spec.restartPolicy=Always,spec.schedulerName='), true);
    assert.equal(m('spec.serviceAccountName=default'), false);
    assert.equal(m('status.nominatedNodeName='), true);
    assert.equal(m('spec.host=node-1'), true, 'the old v1 name for spec.nodeName');
    assert.equal(parseFieldSelector('spec.hostNetwork=false', 'pods')({ metadata: { name: 'x' } }), true, 'hostNetwork defaults to false');
  });

  test("events: kubectl describe's selector in any order", () => {
    const event = {
      metadata: { name: 'web.1', namespace: 'default' },
      involvedObject: { kind: 'Pod', namespace: 'default', name: 'x', uid: 'u' },
      reason: 'Started',
      type: 'Normal',
      source: { component: 'kubelet' },
    };
    const orders = [
      'involvedObject.name=x,involvedObject.namespace=default,involvedObject.uid=u,involvedObject.kind=Pod',
      'involvedObject.kind=Pod,involvedObject.uid=u,involvedObject.namespace=default,involvedObject.name=x',
      'involvedObject.uid=u,involvedObject.name=x,involvedObject.kind=Pod,involvedObject.namespace=default',
    ];
    for (const s of orders) assert.equal(parseFieldSelector(s, 'events')(event), true, s);
    assert.equal(parseFieldSelector('involvedObject.name=y,involvedObject.kind=Pod', 'events')(event), false);
    assert.equal(parseFieldSelector('reason=Started,type=Normal,source=kubelet', 'events')(event), true);
    assert.equal(
      parseFieldSelector('source=podctl', 'events')({ reportingComponent: 'podctl' }),
      true,
      'source falls back to reportingComponent',
    );
  });

  test('secrets, nodes and namespaces: their own fields', () => {
    assert.equal(parseFieldSelector('type=Opaque', 'secrets')({ type: 'Opaque' }), true);
    assert.equal(parseFieldSelector('spec.unschedulable=false', 'nodes')({ metadata: { name: 'n' }, spec: {} }), true);
    assert.equal(parseFieldSelector('status.phase=Active', 'namespaces')({ status: { phase: 'Active' } }), true);
    assert.equal(parseFieldSelector('metadata.namespace=default', 'configmaps')({ metadata: { namespace: 'default' } }), true);
  });

  test('escaped values: \\, \\= and \\\\ are data', () => {
    const obj = { metadata: { name: 'a,b=c\\d' } };
    assert.equal(parseFieldSelector('metadata.name=a\\,b\\=c\\\\d', 'configmaps')(obj), true);
    assert.equal(
      badRequest(() => parseFieldSelector('metadata.name=a\\x', 'pods')),
      'invalid field selector: invalid escape sequence: \\x',
    );
    assert.equal(
      badRequest(() => parseFieldSelector('metadata.name=a\\', 'pods')),
      'invalid field selector: invalid escape sequence: \\',
    );
    assert.equal(
      badRequest(() => parseFieldSelector('metadata.name=a=b', 'pods')),
      'invalid field selector: unescaped character in value: 61',
    );
  });

  test("unsupported fields and syntax: 400 with the API server's words", () => {
    assert.equal(
      badRequest(() => parseFieldSelector('spec.containers=x', 'pods')),
      'field label not supported: spec.containers',
    );
    assert.equal(
      badRequest(() => parseFieldSelector('metadata.namespace=x', 'nodes')),
      'field label not supported: metadata.namespace',
    );
    assert.equal(
      badRequest(() => parseFieldSelector('type=x', 'pods')),
      'field label not supported: type',
    );
    assert.equal(
      badRequest(() => parseFieldSelector('constructor=x', 'pods')),
      'field label not supported: constructor',
    );
    assert.equal(
      badRequest(() => parseFieldSelector('data.key=x', 'configmaps')),
      '"data.key" is not a known field selector: only "metadata.name", "metadata.namespace"',
    );
    assert.equal(
      badRequest(() => parseFieldSelector('status.phase', 'pods')),
      "invalid selector: 'status.phase'; can't understand 'status.phase'",
    );
    // Sorted before they are checked: the first unknown field in that order is named.
    assert.equal(
      badRequest(() => parseFieldSelector('zz=1,aa=2', 'pods')),
      'field label not supported: aa',
    );
  });
});
