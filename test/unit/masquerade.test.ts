import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  bridgeMasquerades,
  ensurePodMasquerade,
  MASQUERADE_CHAIN,
  removePodMasquerade,
  sweepBridgeMasquerades,
  type Iptables,
} from '../../src/core/embedded/masquerade.js';

/** iptables' nat table in memory: rules as `iptables -S` prints them, which is what the code reads back. */
class FakeNat {
  readonly chains = new Map<string, string[]>([['POSTROUTING', []]]);
  readonly mutations: string[][] = [];

  private static quote(arg: string): string {
    return /[\s"]/.test(arg) ? `"${arg.replace(/"/g, '\\"')}"` : arg;
  }

  private line(chain: string, spec: string[]): string {
    return `-A ${chain} ${spec.map(FakeNat.quote).join(' ')}`;
  }

  private chain(name: string): string[] {
    const c = this.chains.get(name);
    if (!c) throw new Error(`iptables: No chain/target/match by that name (${name})`);
    return c;
  }

  readonly run: Iptables = async (args) => {
    assert.deepEqual(args.slice(0, 2), ['-t', 'nat']);
    const [op, name, ...spec] = args.slice(2) as [string, string, ...string[]];
    if (op !== '-S' && op !== '-C') this.mutations.push(args.slice(2));
    switch (op) {
      case '-S':
        return [name === 'POSTROUTING' ? '-P POSTROUTING ACCEPT' : `-N ${name}`, ...this.chain(name)].join('\n') + '\n';
      case '-N':
        if (this.chains.has(name)) throw new Error('iptables: Chain already exists.');
        this.chains.set(name, []);
        return '';
      case '-F':
        this.chain(name).length = 0;
        return '';
      case '-X':
        if (this.chain(name).length) throw new Error('iptables: Directory not empty.');
        this.chains.delete(name);
        return '';
      case '-A':
        this.chain(name).push(this.line(name, spec));
        return '';
      case '-C':
        if (!this.chain(name).includes(this.line(name, spec)))
          throw new Error('iptables: Bad rule (does a matching rule exist in that chain?).');
        return '';
      case '-D': {
        const rules = this.chain(name);
        const i = rules.indexOf(this.line(name, spec));
        if (i < 0) throw new Error('iptables: Bad rule (does a matching rule exist in that chain?).');
        rules.splice(i, 1);
        return '';
      }
      default:
        throw new Error(`unexpected ${op}`);
    }
  };
}

const SUBNET = '10.89.0.0/16';
const ID_LIVE = 'a'.repeat(64);
const ID_GONE = 'b'.repeat(64);
/** As the bridge plugin (ipMasq) leaves them, printed by iptables -S. */
const bridgeJump = (ip: string, id: string, chain: string, network = 'podctl') =>
  `-A POSTROUTING -s ${ip}/32 -m comment --comment "name: \\"${network}\\" id: \\"${id}\\"" -j ${chain}`;

test('the pod network masquerade: one chain for the subnet, returning for pods and multicast, added once', async () => {
  const nat = new FakeNat();
  assert.equal(await ensurePodMasquerade(nat.run, SUBNET), 'added');
  assert.deepEqual(nat.chains.get(MASQUERADE_CHAIN), [
    `-A ${MASQUERADE_CHAIN} -d ${SUBNET} -j RETURN`,
    `-A ${MASQUERADE_CHAIN} -d 224.0.0.0/4 -j RETURN`,
    `-A ${MASQUERADE_CHAIN} -j MASQUERADE`,
  ]);
  assert.deepEqual(nat.chains.get('POSTROUTING'), [
    `-A POSTROUTING -s ${SUBNET} -m comment --comment "podctl pod network masquerade" -j ${MASQUERADE_CHAIN}`,
  ]);

  const before = nat.mutations.length;
  assert.equal(await ensurePodMasquerade(nat.run, SUBNET), 'present');
  assert.equal(nat.mutations.length, before, 'a second up changes nothing');
  assert.equal(nat.chains.get('POSTROUTING')!.length, 1);
});

test('a masquerade chain with other rules is rewritten, and a missing jump added back', async () => {
  const nat = new FakeNat();
  await ensurePodMasquerade(nat.run, SUBNET);
  nat.chains.get(MASQUERADE_CHAIN)!.splice(1, 1, `-A ${MASQUERADE_CHAIN} -j ACCEPT`);
  nat.chains.get('POSTROUTING')!.length = 0;
  assert.equal(await ensurePodMasquerade(nat.run, SUBNET), 'added');
  assert.deepEqual(nat.chains.get(MASQUERADE_CHAIN), [
    `-A ${MASQUERADE_CHAIN} -d ${SUBNET} -j RETURN`,
    `-A ${MASQUERADE_CHAIN} -d 224.0.0.0/4 -j RETURN`,
    `-A ${MASQUERADE_CHAIN} -j MASQUERADE`,
  ]);
  assert.equal(nat.chains.get('POSTROUTING')!.length, 1);
});

test('removing the masquerade leaves the nat table as before, and removing it again is no error', async () => {
  const nat = new FakeNat();
  nat.chains.get('POSTROUTING')!.push('-A POSTROUTING -m comment --comment "CNI portfwd requiring masquerade" -j CNI-HOSTPORT-MASQ');
  await ensurePodMasquerade(nat.run, SUBNET);
  assert.equal(await removePodMasquerade(nat.run, SUBNET), true);
  assert.equal(nat.chains.has(MASQUERADE_CHAIN), false);
  assert.deepEqual(nat.chains.get('POSTROUTING'), [
    '-A POSTROUTING -m comment --comment "CNI portfwd requiring masquerade" -j CNI-HOSTPORT-MASQ',
  ]);
  assert.equal(await removePodMasquerade(nat.run, SUBNET), false);
});

test("the bridge plugin's per-pod masquerades are read from iptables -S, for this network only", () => {
  const out = [
    '-P POSTROUTING ACCEPT',
    bridgeJump('10.89.0.5', ID_LIVE, 'CNI-0ca0f4d699b810f51e373dbf'),
    bridgeJump('10.88.0.9', ID_GONE, 'CNI-1111', 'podman'),
    '-A POSTROUTING -m comment --comment "CNI portfwd requiring masquerade" -j CNI-HOSTPORT-MASQ',
  ].join('\n');
  assert.deepEqual(bridgeMasquerades(out, 'podctl'), [
    { source: '10.89.0.5/32', sandboxId: ID_LIVE, chain: 'CNI-0ca0f4d699b810f51e373dbf' },
  ]);
});

test(
  'per-pod masquerades of sandboxes that are gone are removed with their chains; a live sandbox and other networks ' + 'keep theirs',
  async () => {
    const nat = new FakeNat();
    const comment = (id: string, network = 'podctl') => `-m comment --comment "name: \\"${network}\\" id: \\"${id}\\""`;
    for (const [ip, id, chain, network] of [
      ['10.89.0.5', ID_LIVE, 'CNI-aaaa', 'podctl'],
      ['10.89.0.6', ID_GONE, 'CNI-bbbb', 'podctl'],
      ['10.88.0.7', ID_GONE, 'CNI-cccc', 'podman'],
    ] as const) {
      nat.chains.get('POSTROUTING')!.push(bridgeJump(ip, id, chain, network));
      nat.chains.set(chain, [
        `-A ${chain} -d 10.89.0.0/16 ${comment(id, network)} -j ACCEPT`,
        `-A ${chain} ! -d 224.0.0.0/4 ${comment(id, network)} -j MASQUERADE`,
      ]);
    }
    assert.deepEqual(await sweepBridgeMasquerades(nat.run, 'podctl', new Set([ID_LIVE])), [ID_GONE]);
    assert.deepEqual(nat.chains.get('POSTROUTING'), [
      bridgeJump('10.89.0.5', ID_LIVE, 'CNI-aaaa'),
      bridgeJump('10.88.0.7', ID_GONE, 'CNI-cccc', 'podman'),
    ]);
    assert.equal(nat.chains.has('CNI-bbbb'), false);
    assert.equal(nat.chains.has('CNI-aaaa'), true);
    assert.equal(nat.chains.has('CNI-cccc'), true);
    assert.deepEqual(await sweepBridgeMasquerades(nat.run, 'podctl', new Set([ID_LIVE])), [], 'nothing left to sweep');
  },
);
