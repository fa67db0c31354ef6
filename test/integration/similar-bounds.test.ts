/**
 * The console's reads of grouping are bounded whatever grouping holds: the active projects are
 * bounded by age (and the reader takes the most recently active, saying when it leaves some
 * out), and the groups list does work in proportion to its limit, not to the groups there are.
 */
import { afterEach, beforeEach, describe, expect, inject, it } from 'vitest';
import {
  createSimilarGroups,
  GROUPS_WEIGHED_PER_LISTED,
  MOST_PROJECTS_SEARCHED,
} from '../../src/grouping/similar-groups.js';
import { groupMembersKey, projectKeys, projectsKey } from '../../src/grouping/similar-keys.js';
import { createLogger } from '../../src/logger.js';
import { createWorkerConnection, type RedisConnection } from '../../src/queue/redis.js';
import type { Delivery } from '../../src/webhooks/delivery.js';
import { keyOfRecord } from '../../src/webhooks/delivery.js';
import type { FeedbackRecord } from '../../src/webhooks/feedback-record.js';
import { createTestWorkerEnv, type TestWorkerEnv } from '../helpers/test-worker.js';
import { testGrouping } from '../helpers/test-grouping.js';

const TTL_SECONDS = 3600;

let env: TestWorkerEnv;
const connections: RedisConnection[] = [];
function connection(): RedisConnection {
  const made = createWorkerConnection(inject('redisUrl'), createLogger({ level: 'silent' }));
  connections.push(made);
  return made;
}
beforeEach(async () => {
  env = await createTestWorkerEnv();
});
afterEach(async () => {
  for (const made of connections.splice(0)) made.disconnect();
  await env.close();
});

/** Grouping as a worker does it; `now` moves its clock. */
function grouping(now: () => number = Date.now) {
  return testGrouping({
    connection: connection(),
    prefix: env.prefix,
    ttlSeconds: TTL_SECONDS,
    now,
  });
}

/** The console's reader, on a connection that counts the commands it sends, and its warnings. */
function reader() {
  const counted = connection();
  let commands = 0;
  // Every command, a pipeline's included, goes through sendCommand.
  const send = counted.sendCommand.bind(counted) as (...args: unknown[]) => unknown;
  counted.sendCommand = ((...args: unknown[]) => {
    commands += 1;
    return send(...args);
  }) as typeof counted.sendCommand;
  const logs: Record<string, unknown>[] = [];
  const groups = createSimilarGroups({
    connection: counted,
    prefix: env.prefix,
    ttlSeconds: TTL_SECONDS,
    logger: createLogger({
      level: 'info',
      destination: { write: (line: string) => void logs.push(JSON.parse(line)) },
    }),
  });
  return {
    groups,
    logs,
    /** Commands sent since the last call. */
    commands: () => {
      const sent = commands;
      commands = 0;
      return sent;
    },
  };
}

function delivery(record: FeedbackRecord): Delivery {
  return {
    key: keyOfRecord(record.id),
    event: 'feedback.created',
    receivedAt: new Date().toISOString(),
    record,
  };
}

/** A report that shares no word with another's. */
function lone(project: string, n: number): FeedbackRecord {
  const word = (k: number) => `${project.replace(/\W/g, '')}q${n.toString(36)}x${k}`;
  return {
    id: `fb_${project}_${n}`,
    project_id: project,
    title: `${word(1)} ${word(2)} ${word(3)}`,
  };
}

describe('the projects grouping keeps', () => {
  it('are scored by their last entry, and one idle past the ttl is let go', async () => {
    await grouping().group(delivery(lone('prj_old', 0)));
    const scored = await env.connection.zrange(projectsKey(env.prefix), '0', '-1', 'WITHSCORES');
    expect(scored[0]).toBe('prj_old');
    expect(Math.abs(Number(scored[1]) - Date.now())).toBeLessThan(60_000);
    expect(await env.connection.pttl(projectsKey(env.prefix))).toBeGreaterThan(0);

    // Two ttls later, another project's delivery: the idle one is gone from the key.
    const later = () => Date.now() + 2 * TTL_SECONDS * 1000;
    await grouping(later).group(delivery(lone('prj_new', 0)));
    expect(await env.connection.zrange(projectsKey(env.prefix), '0', '-1')).toEqual(['prj_new']);
  });

  it('are read the most recently active first, at most MOST_PROJECTS_SEARCHED, saying so', async () => {
    // A group of two (a group of one is not listed): the same report twice.
    const live = grouping();
    await live.group(delivery(lone('prj_live', 0)));
    await live.group(delivery({ ...lone('prj_live', 0), id: 'fb_prj_live_0_again' }));
    // Many projects were active before it (written as the enter script writes them).
    const before = Date.now() - 60_000;
    const idle = Array.from({ length: MOST_PROJECTS_SEARCHED }, (_, n) => [
      String(before + n),
      `prj_${n}`,
    ]);
    await env.connection.zadd(projectsKey(env.prefix), ...idle.flat());
    const { groups, logs } = reader();

    const facts = await groups.ofDelivery(keyOfRecord('fb_prj_live_0'));
    expect(facts?.group.size).toBe(2);
    const listed = await groups.list({ sinceMs: before - 1 });
    expect(listed.map((group) => group.project)).toEqual(['prj_live']);
    expect(logs.map((line) => line.msg)).toEqual([
      expect.stringMatching(/least recently active are left out/),
      expect.stringMatching(/least recently active are left out/),
    ]);
  });
});

describe('the groups list across projects', () => {
  it('weighs a bounded number of groups and details only those it returns', async () => {
    // 5 000 groups of one delivery each, an hour old or less, written as the scripts write them
    // (similar-keys.ts): grouping them for real would take a minute.
    const PROJECTS = 100;
    const PER_PROJECT = 50;
    const start = Date.now() - 3_000_000;
    const filling = env.connection.pipeline();
    for (let p = 0; p < PROJECTS; p += 1) {
      const keys = projectKeys(env.prefix, `prj_${p}`);
      for (let n = 0; n < PER_PROJECT; n += 1) {
        const at = start + p * PER_PROJECT + n;
        filling.zadd(keys.groups, at, `${at}-0`);
        filling.zadd(groupMembersKey(keys, `${at}-0`), at, `feedback.created:fb_${p}_${n}`);
      }
      filling.zadd(projectsKey(env.prefix), start + p * PER_PROJECT, `prj_${p}`);
    }
    await filling.exec();
    // The fastest-growing: three reports of one problem, grouped for real, the latest arrivals.
    const hot = (n: number): FeedbackRecord => ({
      id: `fb_hot_${n}`,
      project_id: 'prj_7',
      title: 'Pay button stays grey at checkout',
      description: `When I click pay on the checkout page nothing happens (${n}).`,
    });
    const grouper = grouping();
    for (let n = 0; n < 3; n += 1) await grouper.group(delivery(hot(n)));
    const { groups, logs, commands } = reader();

    const limit = 10;
    const listed = await groups.list({ sinceMs: Date.now() - 3_600_000, limit });
    expect(listed).toHaveLength(limit);
    expect(listed[0]).toMatchObject({ project: 'prj_7', size: 3 });
    expect(listed[0]!.first.recordId).toBe('fb_hot_0');
    // The projects read, a count and a read per project, two counts per group weighed, and per
    // group listed at most six reads and two per its project: 5 000 groups, some 500 commands.
    const weighed = limit * GROUPS_WEIGHED_PER_LISTED;
    expect(commands()).toBeLessThanOrEqual(1 + 2 * PROJECTS + 2 * weighed + 8 * limit);
    expect(logs.map((line) => line.msg)).toEqual([
      expect.stringMatching(/weighed the most recently active groups of the window only/),
    ]);
  });
});
