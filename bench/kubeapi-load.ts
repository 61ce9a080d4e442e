import { readFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import type { ClientRequest } from 'node:http';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeRuntime } from '../fakecri/index.js';
import { httpsClient, kubeRequest, kubectl, rssOf, rssSampler, startKubeAgent, waitRunning, type KubeAgent } from './kubeapi.js';
import {
  BENCH_NAMESPACE,
  BUSYBOX,
  machineInfo,
  mb,
  ms,
  onCleanup,
  podYaml,
  sleep,
  stats,
  until,
  type BenchContext,
  type BenchResult,
  type Row,
} from './lib.js';

const PODS = 100;
const WATCHERS = 200;
const LISTS_PER_SECOND = 50;
const PATCH_EVERY_MS = 500;
const P99_GOAL_MS = 50;
const LIST_CONNECTIONS = 8;
const LABEL = 'bench.podctl.io/seq';

interface Watcher {
  req?: ClientRequest;
  status?: number;
  /** resourceVersions of the events, in the order they came. */
  rvs: string[];
  seen: Set<string>;
  errors: string[];
  /** The server ended the response. */
  ended: boolean;
  /** The bench closed it: what follows is no error. */
  closed: boolean;
}

/** utime + stime of a process, in ms (Linux /proc; clock ticks of 100 Hz). */
function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** A watch of every pod from `rv`, as client-go's reflector opens it after its list; each event's resourceVersion kept. */
function openWatch(agent: KubeAgent, client: ReturnType<typeof httpsClient>, rv: string): Watcher {
  const w: Watcher = { rvs: [], seen: new Set(), errors: [], ended: false, closed: false };
  const url = new URL(`/api/v1/pods?watch=true&resourceVersion=${rv}`, agent.url);
  w.req = httpsRequest(url, { agent: client, headers: { accept: 'application/json' } }, (res) => {
    w.status = res.statusCode;
    let buf = '';
    res.setEncoding('utf8');
    res.on('data', (d: string) => {
      buf += d;
      for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        if (!line.trim()) continue;
        try {
          const e = JSON.parse(line) as { type: string; object?: { metadata?: { resourceVersion?: string }; message?: string } };
          if (e.type === 'ERROR') w.errors.push(e.object?.message ?? line);
          else {
            const v = e.object?.metadata?.resourceVersion ?? '?';
            w.rvs.push(v);
            w.seen.add(v);
          }
        } catch {
          w.errors.push(`not JSON: ${line.slice(0, 100)}`);
        }
      }
    });
    res.on('end', () => (w.ended = !w.closed));
    res.on('error', (err) => w.closed || w.errors.push(err.message));
  });
  w.req.on('error', (err) => w.closed || w.errors.push(err.message));
  w.req.end();
  return w;
}

/**
 * The agent's Kubernetes API under load: 100 pods on the fake runtime, 200 watches of every pod from the listed version, 50 lists of
 * every pod a second, and a label patched on one pod every 500 ms, for 60 s (10 s quick). Every watch must see every change.
 */
export async function kubeapiLoad(ctx: BenchContext): Promise<BenchResult> {
  const began = Date.now();
  const seconds = ctx.quick ? 10 : 60;
  const fake = await FakeRuntime.start({ images: ['docker.io/library/busybox:1.36'] });
  const scratch = mkdtempSync(join(tmpdir(), 'podctl-bench-kubeapi-load-'));
  const stopFake = onCleanup('kubeapi-load fake runtime', async () => {
    await fake.stop();
    rmSync(scratch, { recursive: true, force: true });
  });
  const agent = await startKubeAgent({ dir: scratch, endpoint: fake.endpoint });
  const watchClient = httpsClient(agent, { keepAlive: false });
  // Node's https is HTTP/1.1: a few keep-alive connections stand for client-go's one HTTP/2 connection.
  const listClient = httpsClient(agent, { maxSockets: LIST_CONNECTIONS });
  const patchClient = httpsClient(agent, { maxSockets: 1 });
  const watchers: Watcher[] = [];
  const closeWatches = () => {
    for (const w of watchers) {
      w.closed = true;
      w.req?.destroy();
    }
    watchClient.destroy();
    listClient.destroy();
    patchClient.destroy();
  };
  const stopAgent = onCleanup('kubeapi-load agent', async () => {
    closeWatches();
    await agent.stop();
  });
  try {
    const names = Array.from({ length: PODS }, (_, i) => `bench-load-${i}`);
    const file = join(scratch, 'pods.yaml');
    writeFileSync(file, names.map((n) => podYaml(n, BUSYBOX, { namespace: BENCH_NAMESPACE })).join('---\n'));
    const applied = await kubectl(agent, ['apply', '-f', file], 300_000);
    if (applied.code !== 0) throw new Error(`kubectl apply exited ${applied.code}: ${applied.stderr}`);
    await waitRunning(agent, BENCH_NAMESPACE, names, 180_000);
    // The start-up syncs and the first housekeeping settle before the baseline.
    await sleep(5_000);
    const rssBefore = rssOf(agent.pid);

    const listed = await kubeRequest(agent, listClient, 'GET', '/api/v1/pods');
    if (listed.status !== 200) throw new Error(`GET /api/v1/pods: HTTP ${listed.status}: ${listed.body.slice(0, 300)}`);
    const listBytes = Buffer.byteLength(listed.body);
    // The cost of one list with nothing else going on, for scale.
    const aloneMs: number[] = [];
    for (let i = 0; i < 20; i++) {
      const t0 = performance.now();
      const r = await kubeRequest(agent, listClient, 'GET', '/api/v1/pods');
      if (r.status !== 200) throw new Error(`GET /api/v1/pods: HTTP ${r.status}`);
      aloneMs.push(performance.now() - t0);
    }
    const alone = stats(aloneMs);
    const rv = (JSON.parse(listed.body) as { metadata: { resourceVersion: string } }).metadata.resourceVersion;
    ctx.log(`  ${PODS} pods Running, agent pid ${agent.pid} RSS ${mb(rssBefore)}; opening ${WATCHERS} watches from resourceVersion ${rv}`);
    const opened = performance.now();
    for (let i = 0; i < WATCHERS; i++) watchers.push(openWatch(agent, watchClient, rv));
    if (!(await until(() => watchers.every((w) => w.status !== undefined || w.errors.length > 0), 120_000, 50)))
      throw new Error(`${watchers.filter((w) => w.status === undefined).length} of ${WATCHERS} watches unanswered after 120 s`);
    const refused = watchers.filter((w) => w.status !== 200);
    if (refused.length)
      throw new Error(`${refused.length} watch(es) refused: ${refused[0]!.status ?? ''} ${refused[0]!.errors[0] ?? ''}`.trim());
    const openMs = performance.now() - opened;
    const rssWatching = rssOf(agent.pid);
    ctx.log(
      `  ${WATCHERS} watches open in ${ms(openMs)} (RSS ${mb(rssWatching)}); ${LISTS_PER_SECOND} lists/s and a patch every ${PATCH_EVERY_MS} ms for ${seconds} s`,
    );

    const sampler = rssSampler({ agent: agent.pid }, 250);
    const cpuBefore = cpuMs(agent.pid);
    const benchCpuBefore = process.cpuUsage();
    const windowStart = performance.now();
    const listMs: number[] = [];
    const listErrors: string[] = [];
    const patches: { pod: string; seq: number; rv: string }[] = [];
    const patchErrors: string[] = [];
    const inFlight = new Set<Promise<void>>();
    const track = (p: Promise<void>) => {
      inFlight.add(p);
      void p.finally(() => inFlight.delete(p));
    };
    const end = windowStart + seconds * 1000;
    let seq = 0;
    const patchOne = () => {
      const n = ++seq;
      const pod = names[n % PODS]!;
      const body = { text: JSON.stringify({ metadata: { labels: { [LABEL]: String(n) } } }), type: 'application/merge-patch+json' };
      track(
        kubeRequest(agent, patchClient, 'PATCH', `/api/v1/namespaces/${BENCH_NAMESPACE}/pods/${pod}`, body).then(
          (r) => {
            if (r.status !== 200) return void patchErrors.push(`HTTP ${r.status}: ${r.body.slice(0, 200)}`);
            const obj = JSON.parse(r.body) as { metadata: { resourceVersion: string; labels?: Record<string, string> } };
            if (obj.metadata.labels?.[LABEL] !== String(n)) patchErrors.push(`${pod}: the patched label is not in the answer`);
            patches.push({ pod, seq: n, rv: obj.metadata.resourceVersion });
          },
          (err: Error) => void patchErrors.push(err.message),
        ),
      );
    };
    const patchTimer = setInterval(patchOne, PATCH_EVERY_MS);
    // Open loop: each list leaves on its schedule whether or not the ones before have come back, so a slow one shows in the
    // latencies (a list waiting for one of the client's sockets included, as a client-go request waits for its connection).
    let lists = 0;
    while (performance.now() < end) {
      const due = windowStart + (lists * 1000) / LISTS_PER_SECOND;
      const now = performance.now();
      if (now < due) {
        await sleep(due - now);
        continue;
      }
      lists++;
      track(
        kubeRequest(agent, listClient, 'GET', '/api/v1/pods').then(
          (r) => {
            if (r.status === 200 && r.body.includes('"kind":"PodList"')) listMs.push(performance.now() - due);
            else listErrors.push(`HTTP ${r.status}: ${r.body.slice(0, 200)}`);
          },
          (err: Error) => void listErrors.push(err.message),
        ),
      );
    }
    clearInterval(patchTimer);
    await Promise.all([...inFlight]);
    const windowMs = performance.now() - windowStart;
    const cpu = (cpuMs(agent.pid) - cpuBefore) / windowMs;
    const benchUsage = process.cpuUsage(benchCpuBefore);
    const benchCpu = (benchUsage.user + benchUsage.system) / 1000 / windowMs;
    const patchRvs = new Set(patches.map((p) => p.rv));
    // Every watch has had the chance to read the last change.
    const drained = await until(() => watchers.every((w) => [...patchRvs].every((r) => w.seen.has(r))), 30_000, 100);
    await sleep(1000);
    const peak = sampler.stop();
    const rssAfter = rssOf(agent.pid);
    const endedEarly = watchers.filter((w) => w.ended).length;
    closeWatches();
    await sleep(3000);
    const rssClosed = rssOf(agent.pid);

    // What changed in the window: every resourceVersion any watch saw (the patches, and whatever the agent's own status writes made).
    const union = new Set(watchers.flatMap((w) => w.rvs));
    const perWatcher = watchers.map((w) => w.rvs.length);
    const missingPatch = watchers.filter((w) => [...patchRvs].some((r) => !w.seen.has(r))).length;
    const incomplete = watchers.filter((w) => w.seen.size !== union.size).length;
    const duplicated = watchers.filter((w) => w.seen.size !== w.rvs.length).length;
    const watchErrors = watchers.flatMap((w) => w.errors);
    const everyChange =
      drained && endedEarly === 0 && missingPatch === 0 && incomplete === 0 && duplicated === 0 && watchErrors.length === 0;
    const l = stats(listMs);
    const listsOk = listErrors.length === 0 && l.n > 0;
    const counts = stats(perWatcher);
    ctx.log(
      `  ${patches.length} patches, ${union.size} changes seen; events per watch min ${counts.min} max ${counts.max}; lists p50 ${ms(l.median)} p99 ${ms(l.p99)} (n=${l.n}, ${listErrors.length} failed)`,
    );
    ctx.log(
      `  agent RSS ${mb(rssBefore)} before, ${mb(rssAfter)} at the end (peak ${mb(peak.agent ?? NaN)}), ${mb(rssClosed)} with the watches closed`,
    );

    const findings: string[] = [];
    if (!everyChange)
      findings.push(
        `Not every watch saw every change: ${missingPatch} of ${WATCHERS} missed a patch, ${incomplete} saw fewer than the ${union.size} changes any watch saw, ${duplicated} saw one twice; ${watchErrors.length} watch error(s)${watchErrors[0] ? ` (first: ${watchErrors[0]})` : ''}${endedEarly ? `; ${endedEarly} ended by the server` : ''}.`,
      );
    if (patchErrors.length)
      findings.push(
        `${patchErrors.length} of ${patches.length + patchErrors.length} label patches failed under the load (first: ${patchErrors[0]}); the watches are judged on the changes that were made.`,
      );
    if (!listsOk || l.p99 >= P99_GOAL_MS)
      findings.push(
        `Lists under load: p99 ${ms(l.p99)} (goal < ${P99_GOAL_MS} ms), p50 ${ms(l.median)}, max ${ms(l.max)}, ${listErrors.length} failed${listErrors[0] ? ` (first: ${listErrors[0]})` : ''}; the agent used ${(cpu * 100).toFixed(0)}% of one core in the window, on a 2-core machine shared with the bench process (the fake runtime, ${WATCHERS} watch readers, the list client) and the machine's other work (load average ${loadavg()[0]!.toFixed(1)}). One list alone takes ${ms(alone.median)} (${(listBytes / 1024).toFixed(0)} KB of JSON): ${LISTS_PER_SECOND} a second ask for ${((alone.median * LISTS_PER_SECOND) / 10).toFixed(0)}% of a core, so the lists queue whenever the agent gets less.`,
      );
    const rows: Row[] = [
      {
        name: `every watch got every change (${WATCHERS} watches)`,
        value: `${everyChange ? 'yes' : 'NO'}: ${patches.length} label patches${patchErrors.length ? ` (${patchErrors.length} more failed)` : ''}, ${union.size} changes in all; events per watch min ${counts.min}, max ${counts.max}${missingPatch ? `; ${missingPatch} missed a patch` : ''}${watchErrors.length ? `; ${watchErrors.length} errors` : ''}`,
        target: 'every watch: every change, once',
        met: everyChange,
        about: `${WATCHERS} \`GET /api/v1/pods?watch=true&resourceVersion=<listed>\` over HTTPS (Node's https, the kubeconfig's client certificate, one connection each), opened after a list. A change is a resourceVersion any watch saw: the merge patches of a label (one pod every ${PATCH_EVERY_MS} ms, each answer's resourceVersion must be in every watch) and whatever the agent's status writes added; every watch must hold each exactly once.`,
      },
      {
        name: `list of ${PODS} pods, alone`,
        value: `p50 ${ms(alone.median)}, p99 ${ms(alone.p99)} (n=${alone.n}); ${(listBytes / 1024).toFixed(0)} KB each`,
        about:
          '`GET /api/v1/pods` 20 times one after the other before the watches open, on the same keep-alive client: the cost of one list.',
      },
      {
        name: `list of ${PODS} pods, ${LISTS_PER_SECOND}/s during the watches`,
        value: l.n
          ? `p50 ${ms(l.median)}, p90 ${ms(l.p90)}, p99 ${ms(l.p99)}, max ${ms(l.max)} (n=${l.n}${listErrors.length ? `, ${listErrors.length} failed` : ''})`
          : 'n/a',
        target: `p99 < ${P99_GOAL_MS} ms`,
        met: listsOk ? l.p99 < P99_GOAL_MS : false,
        about: `\`GET /api/v1/pods\` (JSON, every namespace) on a keep-alive https agent of ${LIST_CONNECTIONS} connections, sent on a fixed schedule (open loop: a slow answer does not delay the next request, and one waiting for a free connection counts its wait), timed from its scheduled start to the end of the body, for ${seconds} s.`,
      },
      {
        name: 'agent RSS',
        value: `${mb(rssBefore)} before the watches, ${mb(rssWatching)} with them open, ${mb(rssAfter)} at the end (peak ${mb(peak.agent ?? NaN)}; growth ${mb(rssAfter - rssBefore)}), ${mb(rssClosed)} 3 s after they closed`,
        about:
          "VmRSS of the agent's process (/proc/PID/status): once the pods are quiet, once the watches are open, sampled every 250 ms in the window, at its end, and after the watches closed.",
      },
      {
        name: 'agent CPU in the window',
        value: `${(cpu * 100).toFixed(0)}% of one core over ${(windowMs / 1000).toFixed(0)} s (the bench process: ${(benchCpu * 100).toFixed(0)}%); ${WATCHERS} watches opened in ${ms(openMs)}`,
        about:
          "utime + stime of the agent's process (/proc/PID/stat) over the window, and process.cpuUsage() of the bench process (the fake runtime, the watch readers, the lists and patches) beside it.",
      },
    ];
    return {
      name: 'kubeapi-load',
      title: `The agent's Kubernetes API under load (${PODS} pods, ${WATCHERS} watches, ${LISTS_PER_SECOND} lists/s)`,
      quick: ctx.quick,
      machine: machineInfo('fake 0.0.0-fake (in the bench process)'),
      rows,
      findings,
      notes: [
        `One \`podctl agent --kube-api-port 0\` on the fake runtime (in the bench process); ${PODS} pods applied with kubectl. The watches, the lists and the patches come from the bench process too, so they share its CPU with the fake.`,
        `Window: ${seconds} s${ctx.quick ? ' (quick mode; the full run is 60 s)' : ''}.${drained ? '' : ' The watches had not all seen the last patch 30 s after the window.'}${endedEarly ? ` ${endedEarly} watch(es) were ended by the server.` : ''}`,
      ],
      data: {
        listMs,
        aloneMs,
        listErrors: listErrors.slice(0, 20),
        patches: patches.length,
        patchErrors: patchErrors.slice(0, 20),
        changes: union.size,
        perWatcher: { min: counts.min, max: counts.max },
        watchErrors: watchErrors.slice(0, 20),
        rss: { before: rssBefore, watching: rssWatching, after: rssAfter, peak: peak.agent, closed: rssClosed },
        cpu,
        benchCpu,
        listBytes,
        openMs,
      },
      durationS: (Date.now() - began) / 1000,
    };
  } finally {
    await stopAgent();
    await stopFake();
  }
}
