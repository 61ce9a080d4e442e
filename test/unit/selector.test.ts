import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { IPod } from 'kubernetes-models/v1';
import { labelFilter, parseSelector, selects } from '../../src/cli/selector.js';

const labels = { app: 'web', tier: 'front', 'example.com/team': 'a', replicas: '3', empty: '' };
const match = (s: string) => selects(parseSelector(s), labels);

test("-l selects as the API's label selectors do: equality, sets, existence, order", () => {
  const cases: [string, boolean][] = [
    ['app=web', true],
    ['app==web', true],
    ['app=db', false],
    ['app!=db', true],
    ['app!=web', false],
    ['missing!=x', true],
    ['app in (web, db)', true],
    ['app in (db)', false],
    ['app notin (db,cache)', true],
    ['missing notin (x)', true],
    ['missing in (x)', false],
    ['app', true],
    ['missing', false],
    ['!missing', true],
    ['!app', false],
    ['example.com/team=a', true],
    ['empty=', true],
    ['replicas>2', true],
    ['replicas<3', false],
    ['app>1', false],
    ['app=web,tier in (front,back),!canary', true],
    ['app=web,tier=back', false],
    ['', true],
  ];
  for (const [selector, expected] of cases) assert.equal(match(selector), expected, selector);
  assert.equal(selects(parseSelector('app'), undefined), false, 'a pod with no labels has none');
  assert.equal(selects(parseSelector('!app'), undefined), true);
});

test('a selector that is not one is refused, naming what is wrong', () => {
  for (const [selector, why] of [
    ['app=web,', /an empty requirement/],
    ['app in ()', /the set of values is empty/],
    ['-bad=x', /"-bad=x" is not a label key|is not a label key/],
    ['app=we b', /"we b" is not a label value/],
    ['replicas>two', /expected an integer/],
  ] as const) {
    assert.throws(
      () => parseSelector(selector),
      (err: Error) => err.message.startsWith(`invalid --selector ${JSON.stringify(selector)}: `) && why.test(err.message),
      selector,
    );
  }
});

test('--show-labels: a LABELS column last, the pairs sorted by key as kubectl prints them, <none> for a pod without', async () => {
  const { podRow, podTableHead } = await import('../../src/cli/table.js');
  const pod = (labels?: Record<string, string>): IPod => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'web', namespace: 'default', uid: 'u', labels },
    spec: { containers: [{ name: 'app', image: 'busybox:1.36' }] },
  });
  const opts = { showLabels: true, wide: true, now: 0 };
  assert.deepEqual(podTableHead(opts).slice(-2), ['CONTAINERS', 'LABELS']);
  assert.equal(podRow(pod({ tier: 'front', app: 'web', 'a.io/x': '1' }), opts).at(-1), 'a.io/x=1,app=web,tier=front');
  assert.equal(podRow(pod(), opts).at(-1), '<none>');
  assert.equal(podTableHead({}).includes('LABELS'), false, 'only when asked');
});

test('labelFilter: the predicate get pods -l and delete pods -l filter with, refusing a bad selector as it is made', () => {
  const web = labelFilter('app=web,!canary');
  assert.equal(web({ app: 'web' }), true);
  assert.equal(web({ app: 'web', canary: 'yes' }), false);
  assert.equal(web(undefined), false);
  assert.throws(() => labelFilter('app in ()'), /invalid --selector "app in \(\)"/);
});
