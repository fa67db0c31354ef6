import { readFileSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, inject, it } from 'vitest';
import type { SimilarGroupingOptions } from '../../src/grouping/similar-grouping.js';
import { createSimilarGroups } from '../../src/grouping/similar-groups.js';
import {
  groupIdOf,
  groupMembersKey,
  projectKeys,
  readGroupId,
} from '../../src/grouping/similar-keys.js';
import { createLogger } from '../../src/logger.js';
import { createWorkerConnection, type RedisConnection } from '../../src/queue/redis.js';
import { DEFAULT_SIMILAR_THRESHOLD } from '../../src/similar/grouping.js';
import { MOST_POSTINGS_PER_TERM } from '../../src/similar/similarity-index.js';
import { SimilarGrouper } from '../../src/similar/similar-grouper.js';
import { keyOfRecord } from '../../src/webhooks/delivery.js';
import type { SimilarFacts, SimilarWindow } from '../../src/similar/similar-facts.js';
import type { Delivery } from '../../src/webhooks/delivery.js';
import type { FeedbackRecord } from '../../src/webhooks/feedback-record.js';
import { defineHandler, type HandlerContext } from '../../src/worker/handler.js';
import { createTestWorkerEnv, type TestWorkerEnv } from '../helpers/test-worker.js';
import { testGrouping } from '../helpers/test-grouping.js';

let env: TestWorkerEnv;
/** Connections of the test's own (as a worker's), closed after it. */
const connections: RedisConnection[] = [];
function workerConnection(): RedisConnection {
  const connection = createWorkerConnection(inject('redisUrl'), createLogger({ level: 'silent' }));
  connections.push(connection);
  return connection;
}
beforeEach(async () => {
  env = await createTestWorkerEnv();
});
afterEach(async () => {
  for (const connection of connections.splice(0)) connection.disconnect();
  await env.close();
});

const PROJECT = 'prj_shop';
const similarOn = { threshold: DEFAULT_SIMILAR_THRESHOLD, keep: 100_000 };
const HOUR_MS = 60 * 60 * 1000;

/** The same checkout problem, reported again and again in nearly the same words. */
function checkoutReport(n: number): FeedbackRecord {
  return {
    id: `fb_pay_${n}`,
    project_id: PROJECT,
    title: 'Pay button stays grey at checkout',
    description: `When I click pay on the checkout page nothing happens and the button stays grey (${n}).`,
    url: 'https://shop.example/checkout',
  };
}

/** A handler that keeps what each run was told of its group. */
function watching(
  seen: Map<string, SimilarFacts | undefined>,
  windows: readonly SimilarWindow[] = [],
) {
  return defineHandler({
    name: 'watch',
    similarWindows: windows,
    handle: async (ctx: HandlerContext) => {
      seen.set(ctx.record.id, ctx.similar);
    },
  });
}

function keysOf() {
  return projectKeys(env.prefix, PROJECT);
}

/** Grouping as a worker does it, on a connection of the test's own; `options` change the defaults. */
function directGrouping(options: Partial<SimilarGroupingOptions> = {}) {
  return testGrouping({ connection: workerConnection(), prefix: env.prefix, ...options });
}

/** What the console reads and detaches, on the test's connection. */
function consoleGroups() {
  return createSimilarGroups({ connection: env.connection, prefix: env.prefix, ttlSeconds: 3600 });
}

/** A delivery of a record of its own words, received now. */
function reported(id: string, title: string, description: string, project = PROJECT): Delivery {
  return {
    key: keyOfRecord(id),
    event: 'feedback.created',
    receivedAt: new Date().toISOString(),
    record: { id, project_id: project, title, description },
  };
}

describe('grouping similar feedback in routing', () => {
  it('puts similar reports routed at once by two workers in one group, each counted once', async () => {
    const seen = new Map<string, SimilarFacts | undefined>();
    await env.startWorker({ handlers: [watching(seen)], similar: similarOn });
    await env.startWorker({ handlers: [watching(seen)], similar: similarOn });
    await Promise.all(Array.from({ length: 12 }, (_, n) => env.deliver(checkoutReport(n))));
    await env.completedRuns(12);

    const facts = [...seen.values()];
    const groups = new Set(facts.map((fact) => fact?.group.id));
    expect(groups.size).toBe(1);
    const [group] = groups;
    expect(facts.map((fact) => fact!.group.size).sort((a, b) => a - b)).toEqual(
      Array.from({ length: 12 }, (_, n) => n + 1),
    );
    expect(await env.connection.zcard(groupMembersKey(keysOf(), readGroupId(group!)!.group))).toBe(
      12,
    );
    // Joins can finish out of the stream's order (a size is the group's as the delivery joined
    // it), but matches are the stream's: the group's first delivery has none, and the last one
    // in the stream has 10 of its 11 predecessors.
    const firstOf = facts[0]!.group.first;
    expect(facts.every((fact) => fact!.group.first.key === firstOf.key)).toBe(true);
    expect(seen.get(firstOf.recordId)!.matches).toEqual([]);
    expect(Math.max(...facts.map((fact) => fact!.matches.length))).toBe(10);
  });

  it('routes and crosses with the longest window and rateLimit a handler may declare, 30 days', async () => {
    // A longer one is refused at load: the scripts wrote it as 1e+14 or the like, which Redis
    // refused, failing every routing of a grouped delivery.
    const MONTH_MS = 30 * 24 * HOUR_MS;
    const seen = new Map<string, SimilarFacts | undefined>();
    const handler = defineHandler({
      name: 'watch',
      similarWindows: [{ atLeast: 2, withinMs: MONTH_MS }],
      rateLimit: { max: 10, durationMs: MONTH_MS },
      handle: async (ctx: HandlerContext) => {
        seen.set(ctx.record.id, ctx.similar);
      },
    });
    await env.startWorker({ handlers: [handler], similar: similarOn });
    await env.deliver(checkoutReport(0));
    await env.completedRuns(1);
    await env.deliver(checkoutReport(1));
    await env.completedRuns(2);
    expect(seen.get('fb_pay_1')).toMatchObject({
      group: { size: 2 },
      crossed: [{ atLeast: 2, withinMs: MONTH_MS }],
    });
  });

  it('counts a delivery once and keeps its group when its routing runs again', async () => {
    const logger = createLogger({ level: 'silent' });
    const grouping = () => directGrouping({ logger });
    const [one, two] = [grouping(), grouping()];
    const delivery = (n: number): Delivery => ({
      key: `feedback.created:fb_pay_${n}`,
      event: 'feedback.created',
      receivedAt: new Date().toISOString(),
      record: checkoutReport(n),
    });
    await one.group(delivery(0));
    // The same routing on two workers at once (a stalled job taken over), then once more.
    const [a, b] = await Promise.all([one.group(delivery(1)), two.group(delivery(1))]);
    const again = await one.group(delivery(1));
    expect(a.group).toEqual(b.group);
    expect(again.group).toEqual(a.group);
    expect(again.matches).toEqual(a.matches);
    expect(a.group.size).toBe(2);
    expect(
      await env.connection.zcard(groupMembersKey(keysOf(), readGroupId(a.group.id)!.group)),
    ).toBe(2);
    expect(await env.connection.xlen(keysOf().docs)).toBe(2);
  });

  it('tells exactly one delivery that its group crossed a window, with two workers', async () => {
    const seen = new Map<string, SimilarFacts | undefined>();
    const windows = [{ atLeast: 5, withinMs: HOUR_MS }] as const;
    await env.startWorker({ handlers: [watching(seen, windows)], similar: similarOn });
    await env.startWorker({ handlers: [watching(seen, windows)], similar: similarOn });
    await Promise.all(Array.from({ length: 20 }, (_, n) => env.deliver(checkoutReport(n))));
    await env.completedRuns(20);

    const crossing = [...seen.values()].filter((fact) => fact!.crossed.length > 0);
    expect(crossing.map((fact) => fact!.crossed)).toEqual([[{ atLeast: 5, withinMs: HOUR_MS }]]);
    expect(new Set([...seen.values()].map((fact) => fact!.group.id)).size).toBe(1);
  });

  it('takes a detached delivery out of its group for good, even when its routing runs again', async () => {
    const seen = new Map<string, SimilarFacts | undefined>();
    await env.startWorker({ handlers: [watching(seen)], similar: similarOn, concurrency: 1 });
    const deliveries: Delivery[] = [];
    for (let n = 0; n < 3; n += 1) deliveries.push(await env.deliver(checkoutReport(n)));
    await env.completedRuns(3);
    const groups = consoleGroups();
    const third = deliveries[2]!;
    const before = (await groups.ofDelivery(third.key))!;
    expect(before.group.size).toBe(3);

    expect(await groups.detach(third.key)).toBe('detached');
    const alone = (await groups.ofDelivery(third.key, PROJECT))!;
    // A group of its own is known by its entry's id.
    const [thirdEntry] = (await env.connection.xrange(keysOf().docs, '-', '+')).find(
      ([, fields]) => fields[fields.indexOf('r') + 1] === 'fb_pay_2',
    )!;
    expect(alone.group).toEqual({
      id: groupIdOf(PROJECT, thirdEntry),
      size: 1,
      first: { key: third.key, recordId: 'fb_pay_2' },
    });
    expect((await groups.get(before.group.id))!.size).toBe(2);
    expect((await groups.get(before.group.id))!.first.key).toBe(deliveries[0]!.key);

    const rerun = await directGrouping({ connection: env.connection }).group(third);
    expect(rerun.group.id).toBe(alone.group.id);
    expect(await groups.detach(third.key)).toBe('alone');
    expect(await groups.detach('feedback.created:nobody')).toBe('not-found');

    // The group's first, detached: its old group keeps the others and its id.
    expect(await groups.detach(deliveries[0]!.key)).toBe('detached');
    expect((await groups.get(before.group.id))!.size).toBe(1);
    expect((await groups.ofDelivery(deliveries[0]!.key))!.group.id).toBe(`${before.group.id}.d`);
  });

  it('takes a first delivery out again of the group that others joined since its detach', async () => {
    const grouping = directGrouping();
    const groups = consoleGroups();
    const grey = 'When I click pay on the checkout page nothing happens and the button stays grey';
    const title = 'Pay button stays grey at checkout';
    const copyOfA = (id: string) => reported(id, title, `${grey}.`);
    const a = copyOfA('fb_a');
    const first = await grouping.group(a);
    expect((await grouping.group(reported('fb_b', title, `${grey} on my phone.`))).group.size).toBe(
      2,
    );
    expect(await groups.detach(a.key, PROJECT)).toBe('detached');
    // Each time, a copy of A joins it in its group, and the operator takes A out again.
    for (const [n, group] of [
      [1, `${first.group.id}.d`],
      [2, `${first.group.id}.d2`],
      [3, `${first.group.id}.d3`],
    ] as const) {
      const copy = await grouping.group(copyOfA(`fb_a${n}`));
      expect(copy.group).toMatchObject({ id: group, size: 2, first: { key: a.key } });
      expect(await groups.detach(a.key, PROJECT)).toBe('detached');
      expect((await groups.ofDelivery(a.key, PROJECT))!.group).toMatchObject({
        id: `${first.group.id}.d${n + 1}`,
        size: 1,
      });
      expect((await groups.get(group))!.deliveries.map((delivery) => delivery.recordId)).toEqual([
        `fb_a${n}`,
      ]);
    }
    expect((await groups.get(`${first.group.id}.d4`))!.first.key).toBe(a.key);
    expect(await groups.detach(a.key, PROJECT)).toBe('alone');
  });

  it('takes no project_id, null and an empty one as one project: none', async () => {
    const grouping = directGrouping();
    const { project_id: _, ...noProject } = checkoutReport(0);
    const report = (id: string, project: Pick<FeedbackRecord, 'project_id'>): Delivery => ({
      key: keyOfRecord(id),
      event: 'feedback.created',
      receivedAt: new Date().toISOString(),
      record: { ...noProject, id, ...project },
    });
    const first = await grouping.group(report('fb_none', {}));
    const joined = [
      await grouping.group(report('fb_null', { project_id: null })),
      await grouping.group(report('fb_empty', { project_id: '' })),
    ];
    expect(joined.map(({ group }) => group)).toEqual([
      { ...first.group, size: 2 },
      { ...first.group, size: 3 },
    ]);
  });

  it('groups a delivery after a detach by the groups as they are now, on every worker', async () => {
    const [one, two] = [directGrouping(), directGrouping()];
    const groups = consoleGroups();
    const delivery = (project: string, id: string, title: string, description: string) =>
      reported(`${project}_${id}`, title, description, project);
    const grey = 'When I click pay on the checkout page nothing happens and the button stays grey';
    // In each project, worker one groups A and B (copies); the operator takes B out; then C,
    // which each of them matches a little (0.47), is routed by worker one, which had B in A's
    // group, or by worker two, which never saw them. Two groups match C alike: it joins none.
    for (const [project, router] of [
      ['prj_one', one],
      ['prj_two', two],
    ] as const) {
      await one.group(delivery(project, 'a', 'Pay button stays grey at checkout', `${grey}.`));
      const b = delivery(project, 'b', 'Pay button stays grey at checkout', `${grey}!`);
      expect((await one.group(b)).group.size).toBe(2);
      expect(await groups.detach(b.key, project)).toBe('detached');
      const c = delivery(
        project,
        'c',
        'Pay button slow at checkout',
        'When I click pay the checkout page takes ages before anything happens.',
      );
      const facts = await router.group(c);
      expect(facts.matches.map((match) => match.score)).toEqual(
        [0.47, 0.47].map((score) => expect.closeTo(score, 2)),
      );
      expect(facts.group, project).toMatchObject({ size: 1, first: { key: c.key } });
    }
  });

  it('keeps in its index the group a delivery joined when its best match was detached meanwhile', async () => {
    const connection = workerConnection();
    // 0.5, so that C joins with two members' evidence only (below).
    const grouping = directGrouping({ connection, threshold: 0.5 });
    const groups = consoleGroups();
    // The operator's detach, run between a batch's "enter" and its "join" (similar-grouping.ts).
    const scripted = connection as unknown as Record<string, (...args: unknown[]) => unknown>;
    const join = scripted.similarJoin!.bind(connection);
    let beforeJoin: (() => Promise<unknown>) | undefined;
    scripted.similarJoin = async (...args: unknown[]) => {
      await beforeJoin?.();
      beforeJoin = undefined;
      return join(...args);
    };
    const grey = 'When I click pay on the checkout page nothing happens and the button stays grey';
    const title = 'Pay button stays grey at checkout';
    await grouping.group(reported('fb_a', title, `${grey}.`));
    const b = reported('fb_b', title, `${grey} on my phone.`);
    expect((await grouping.group(b)).group.size).toBe(2);
    // X, B's copy, chosen for A's group through B, which the operator takes out before X joins:
    // X joins B in its own group.
    beforeJoin = () => groups.detach(b.key, PROJECT);
    const x = await grouping.group(reported('fb_x', title, `${grey} on my phone!`));
    expect(x.group).toMatchObject({ size: 2, first: { key: b.key } });
    // C matches B and X best (0.49 each), A less (0.41): B's group, with two members, is the
    // one it joins, as every worker reads the groups. With X in A's group (as the worker chose
    // it), A's group had the most evidence, and not enough: C would start a group of its own.
    const c = await grouping.group(
      reported(
        'fb_c',
        'Pay button slow at checkout on my phone',
        'When I click pay the checkout page takes ages before anything happens.',
      ),
    );
    expect(c.matches.map((match) => [match.recordId, Math.round(match.score * 100)])).toEqual([
      ['fb_b', 49],
      ['fb_x', 49],
      ['fb_a', 41],
    ]);
    expect(c.group).toMatchObject({ id: x.group.id, size: 3 });
  });

  it('learns of more detaches than one catch-up reads', async () => {
    // 0.6: a copy joins a group of copies, not one of ten groups of one copy each.
    const grouping = directGrouping({ threshold: 0.6 });
    const groups = consoleGroups();
    const copy = (n: number): Delivery => ({
      key: keyOfRecord(`fb_copy_${n}`),
      event: 'feedback.created',
      receivedAt: new Date().toISOString(),
      record: { ...checkoutReport(0), id: `fb_copy_${n}` },
    });
    const copies = Array.from({ length: 511 }, (_, n) => copy(n));
    const facts = await Promise.all(copies.map((delivery) => grouping.group(delivery)));
    expect(new Set(facts.map((fact) => fact.group.id)).size).toBe(1);
    // A new copy's best matches: the oldest of the copies whose postings a query reads (the
    // newest MOST_POSTINGS_PER_TERM; ties go to the earlier entry). All but the first copy are
    // taken out, those ten last: past the 500 detaches one "enter" reads.
    const best = copies.slice(-MOST_POSTINGS_PER_TERM).slice(0, 10);
    const others = copies.slice(1).filter((delivery) => !best.includes(delivery));
    for (const delivery of [...others, ...best]) {
      expect(await groups.detach(delivery.key, PROJECT)).toBe('detached');
    }
    // Its ten best matches are ten groups alike: it joins none.
    const last = await grouping.group(copy(511));
    expect(last.matches.map((match) => match.recordId)).toEqual(
      best.map((delivery) => delivery.record.id),
    );
    expect(last.group).toMatchObject({ size: 1, first: { key: copy(511).key } });
  });

  it('writes no grouping key and gives no ctx.similar with SIMILAR=off', async () => {
    const seen = new Map<string, SimilarFacts | undefined>();
    await env.startWorker({ handlers: [watching(seen)] });
    await env.deliver(checkoutReport(0));
    await env.deliver(checkoutReport(1));
    await env.completedRuns(2);
    expect([...seen.keys()].sort()).toEqual(['fb_pay_0', 'fb_pay_1']);
    expect([...seen.values()]).toEqual([undefined, undefined]);
    expect(await env.connection.keys(`${env.prefix}:similar*`)).toEqual([]);
  });

  it('drops the oldest deliveries past SIMILAR_KEEP, and says so', async () => {
    const seen = new Map<string, SimilarFacts | undefined>();
    await env.startWorker({
      handlers: [watching(seen)],
      similar: { ...similarOn, keep: 3 },
      concurrency: 1,
    });
    for (let n = 0; n < 5; n += 1) {
      await env.deliver({
        ...checkoutReport(n),
        title: `Problem number ${n} of many kinds`,
        description: `word${n}`,
      });
    }
    await env.completedRuns(5);
    expect(await env.connection.xlen(keysOf().docs)).toBe(3);
    expect(await env.connection.hlen(keysOf().of)).toBe(3);
    const dropped = env.logs.filter((line) => String(line.msg).includes('past SIMILAR_KEEP'));
    expect(dropped.length).toBeGreaterThan(0);
    expect(dropped[0]).toMatchObject({ project: PROJECT, dropped: 1, keep: 3 });
  });

  it('groups hostile text: a 1 MB description, emoji, right-to-left and CJK text', async () => {
    const seen = new Map<string, SimilarFacts | undefined>();
    await env.startWorker({ handlers: [watching(seen)], similar: similarOn, concurrency: 1 });
    const huge = 'crash '.repeat(180_000);
    await env.deliver({ id: 'fb_huge_1', project_id: PROJECT, title: '', description: huge });
    await env.deliver({ id: 'fb_huge_2', project_id: PROJECT, title: '', description: huge });
    await env.deliver({
      id: 'fb_mixed',
      project_id: PROJECT,
      title: '支付按钮 🙈 \u0000 الدفع لا يعمل',
    });
    await env.completedRuns(3);
    expect(seen.get('fb_huge_2')!.group.id).toBe(seen.get('fb_huge_1')!.group.id);
    expect(seen.get('fb_huge_2')!.group.size).toBe(2);
    expect(seen.get('fb_mixed')!.group.size).toBe(1);
    const memory = await env.connection.memory('USAGE', keysOf().docs);
    expect(memory).toBeLessThan(64 * 1024);
  });

  it('groups a short report whose terms are mostly pieces of one long word, with its batch', async () => {
    const grouping = directGrouping();
    const delivery = (id: string, description: string): Delivery => ({
      key: keyOfRecord(id),
      event: 'feedback.created',
      receivedAt: new Date().toISOString(),
      record: { id, project_id: PROJECT, title: '', description },
    });
    // Taken in one batch: a report that cannot be coded would fail the other's routing too.
    const [short, other] = await Promise.all([
      grouping.group(delivery('fb_short', 'Checkout unresponsive')),
      grouping.group(delivery('fb_other', 'internationalization')),
    ]);
    expect(short.group.size).toBe(1);
    expect(other.group.size).toBe(1);
    expect(await env.connection.xlen(keysOf().docs)).toBe(2);
  });

  it('groups as the in-memory engine does, report by report (200 web-app reports)', async () => {
    const rows = readFileSync(
      new URL('../fixtures/similar-webapp-200.jsonl', import.meta.url),
      'utf8',
    )
      .trim()
      .split('\n')
      .map((line) => (JSON.parse(line) as { record: FeedbackRecord }).record);
    const grouping = directGrouping();
    const inMemory = new SimilarGrouper();
    const firstKeys: string[] = [];
    const expected: string[] = [];
    for (const record of rows) {
      const key = keyOfRecord(record.id);
      const delivery: Delivery = {
        key,
        event: 'feedback.created',
        receivedAt: new Date().toISOString(),
        record,
      };
      firstKeys.push((await grouping.group(delivery)).group.first.key);
      expected.push(inMemory.add(key, record).group);
    }
    // The same partition: each report in the group of the same first report.
    expect(firstKeys).toEqual(expected);
    // Not the trivial one: some reports joined an earlier report's group. (Report 126 is the
    // first whose group has more evidence than its single best match's: a second member.)
    expect(new Set(expected).size).toBeLessThan(rows.length);
  });

  it('fires a crossing once when a delivery joins after later ones (out of arrival order)', async () => {
    const grouping = directGrouping({ windows: [{ atLeast: 5, withinMs: 60_000 }] });
    // Received 100 ms apart; the third joins after the sixth (a retry, a slow worker).
    const start = Date.now();
    const arrivals = [1, 2, 4, 5, 6, 3, 7];
    const crossed: string[] = [];
    for (const n of arrivals) {
      const record = checkoutReport(n);
      const facts = await grouping.group({
        key: keyOfRecord(record.id),
        event: 'feedback.created',
        receivedAt: new Date(start + n * 100).toISOString(),
        record,
      });
      if (facts.crossed.length > 0) crossed.push(record.id);
    }
    expect(crossed).toEqual(['fb_pay_6']);
  });

  it('reads each entry once while its index is built again under concurrent routings', async () => {
    // A small bound, so that the index is built again and again.
    const grouping = directGrouping({ keep: 20 });
    const facts: SimilarFacts[] = [];
    const titles = ['Pay button grey', 'Cannot log in', 'Dark mode broken', 'Search is slow'];
    // Eight routings in flight at every moment, as a worker's concurrency keeps them.
    const inFlight = new Set<Promise<void>>();
    for (let n = 0; n < 600; n += 1) {
      const title = titles[n % titles.length]!;
      const record = { ...checkoutReport(n), title, description: `${title}, details ${n}` };
      const routing = grouping
        .group({
          key: keyOfRecord(record.id),
          event: 'feedback.created',
          receivedAt: new Date().toISOString(),
          record,
        })
        .then((fact) => void facts.push(fact))
        .finally(() => inFlight.delete(routing));
      inFlight.add(routing);
      if (inFlight.size >= 8) await Promise.race(inFlight);
    }
    await Promise.all(inFlight);
    const repeated = facts.filter(
      (fact) => new Set(fact.matches.map((match) => match.key)).size !== fact.matches.length,
    );
    expect(repeated).toEqual([]);
  });
});
