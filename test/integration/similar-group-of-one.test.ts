/**
 * A group of one keeps no members key and is not in the project's groups (issue 30: most groups
 * are of one, and a key each cost ~75 bytes per delivery, an entry in the groups ~60): it reads
 * as a group of one all the same (its page, a delivery's facts), a window of one crosses on its
 * arrival, its second member adds it to a members key at its stored arrival and to the groups
 * list, an operator's detach writes neither, and dropping it (SIMILAR_KEEP) leaves nothing.
 */
import { afterEach, beforeEach, expect, inject, it } from 'vitest';
import { createSimilarGroups } from '../../src/grouping/similar-groups.js';
import { groupMembersKey, projectKeys, readGroupId } from '../../src/grouping/similar-keys.js';
import { createLogger } from '../../src/logger.js';
import { createWorkerConnection, type RedisConnection } from '../../src/queue/redis.js';
import { keyOfRecord, type Delivery } from '../../src/webhooks/delivery.js';
import type { FeedbackRecord } from '../../src/webhooks/feedback-record.js';
import { createTestWorkerEnv, type TestWorkerEnv } from '../helpers/test-worker.js';
import { testGrouping } from '../helpers/test-grouping.js';

const PROJECT = 'prj_shop';
const HOUR_MS = 60 * 60 * 1000;
/** Arrivals a second apart, before the test's clock: no two in one millisecond. */
const START = Date.now() - HOUR_MS;

let env: TestWorkerEnv;
let connection: RedisConnection;
beforeEach(async () => {
  env = await createTestWorkerEnv();
  connection = createWorkerConnection(inject('redisUrl'), createLogger({ level: 'silent' }));
});
afterEach(async () => {
  connection.disconnect();
  await env.close();
});

function grouping(keep = 100_000) {
  return testGrouping({
    connection,
    prefix: env.prefix,
    keep,
    ttlSeconds: 24 * 3600,
    windows: [{ atLeast: 1, withinMs: HOUR_MS * 2 }],
  });
}

function groups() {
  return createSimilarGroups({
    connection: env.connection,
    prefix: env.prefix,
    ttlSeconds: 24 * 3600,
  });
}

function checkout(n: number): Delivery {
  const record: FeedbackRecord = {
    id: `fb_pay_${n}`,
    project_id: PROJECT,
    title: 'Pay button stays grey at checkout',
    description: `When I click pay on the checkout page nothing happens and the button stays grey (${n}).`,
    url: 'https://shop.example/checkout',
  };
  return delivery(record, n);
}

function unlike(n: number): Delivery {
  return delivery(
    { id: `fb_other_${n}`, project_id: PROJECT, title: `Topic ${n} alone`, description: `zq${n}x` },
    n,
  );
}

function delivery(record: FeedbackRecord, n: number): Delivery {
  return {
    key: keyOfRecord(record.id),
    event: 'feedback.created',
    receivedAt: new Date(START + n * 1000).toISOString(),
    record,
  };
}

const membersKeyOf = (groupId: string) =>
  groupMembersKey(projectKeys(env.prefix, PROJECT), readGroupId(groupId)!.group);

it('keeps no members key for a group of one, reads it as one, and adds the first when a second joins', async () => {
  const grouper = grouping();
  const first = await grouper.group(checkout(0));
  expect(first.group.size).toBe(1);
  // A window of one crosses on the first arrival, with no members to count.
  expect(first.crossed).toEqual([{ atLeast: 1, withinMs: HOUR_MS * 2 }]);
  expect(await env.connection.exists(membersKeyOf(first.group.id))).toBe(0);
  // Its line, under its record id (lineField), names neither its group nor its first: both are
  // itself (stored-grouping.ts).
  expect(await env.connection.hget(projectKeys(env.prefix, PROJECT).of, 'fb_pay_0')).toMatch(
    /^[0-9a-z]+(\.[0-9a-z]+)?\|\|1\|-?\d{1,10}\|[^|]*\|\|$/,
  );

  const reader = groups();
  expect(await reader.list({ sinceMs: START - HOUR_MS })).toEqual([]);
  const alone = (await reader.get(first.group.id))!;
  expect(alone).toMatchObject({ id: first.group.id, size: 1, lastAt: START });
  expect(alone.first).toMatchObject({ key: 'feedback.created:fb_pay_0', at: START });
  expect(alone.arrivals.reduce((a, b) => a + b, 0)).toBe(1);
  expect(alone.deliveries).toEqual([
    expect.objectContaining({ key: 'feedback.created:fb_pay_0', at: START }),
  ]);
  expect((await reader.ofDelivery('feedback.created:fb_pay_0', PROJECT))!.group.size).toBe(1);

  const second = await grouper.group(checkout(1));
  expect(second.group).toMatchObject({ id: first.group.id, size: 2 });
  expect(second.crossed).toEqual([]);
  // The first joins the members key at its arrival as stored; members are line fields.
  expect(
    await env.connection.zrange(membersKeyOf(first.group.id), '0', '-1', 'WITHSCORES'),
  ).toEqual(['fb_pay_0', String(START), 'fb_pay_1', String(START + 1000)]);
  expect((await reader.get(first.group.id))!.size).toBe(2);
  const [listed] = await reader.list({ sinceMs: START - HOUR_MS });
  expect(listed).toMatchObject({ id: first.group.id, size: 2, lastAt: START + 1000 });
  expect(listed!.first).toMatchObject({ key: 'feedback.created:fb_pay_0', at: START });
});

it('writes no members key nor group entry for a detached delivery, and drops a group of one whole', async () => {
  const grouper = grouping(3);
  const first = await grouper.group(checkout(0));
  await grouper.group(checkout(1));
  const reader = groups();
  expect(await reader.detach('feedback.created:fb_pay_1', PROJECT)).toBe('detached');
  const detached = (await reader.ofDelivery('feedback.created:fb_pay_1', PROJECT))!;
  expect(detached.group.size).toBe(1);
  expect(await env.connection.exists(membersKeyOf(detached.group.id))).toBe(0);
  expect((await reader.get(first.group.id))!.size).toBe(1);
  expect(await reader.get(detached.group.id)).toMatchObject({ size: 1, lastAt: START + 1000 });
  // The group it left keeps its entry while it has a member; its own, of one, has none.
  expect((await reader.list({ sinceMs: START - HOUR_MS })).map((group) => group.id)).toEqual([
    first.group.id,
  ]);

  const kept = [await grouper.group(unlike(2))];

  // Two more past SIMILAR_KEEP (3): the first (its group's last member) and the second go.
  kept.push(await grouper.group(unlike(3)), await grouper.group(unlike(4)));
  // Left in the groups: those of the kept that others joined, not the first's nor any of one.
  const left = await env.connection.zrange(projectKeys(env.prefix, PROJECT).groups, '0', '-1');
  const joined = kept.filter((facts) => facts.group.size > 1);
  expect(left.sort()).toEqual(
    [...new Set(joined.map((facts) => readGroupId(facts.group.id)!.group))].sort(),
  );
  for (const facts of kept) {
    expect(await reader.get(facts.group.id)).toMatchObject({ id: facts.group.id });
  }
  expect(await reader.get(first.group.id)).toBeUndefined();
  expect(await reader.get(detached.group.id)).toBeUndefined();
});
