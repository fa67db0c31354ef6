import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MOST_PER_BATCH } from '../../src/grouping/similar-grouping.js';
import { groupMembersKey, projectKeys } from '../../src/grouping/similar-keys.js';
import { createLogger } from '../../src/logger.js';
import { createWorkerConnection, type RedisConnection } from '../../src/queue/redis.js';
import { SimilarGrouper } from '../../src/similar/similar-grouper.js';
import { MOST_POSTINGS_PER_TERM } from '../../src/similar/similarity-index.js';
import { keyOfRecord } from '../../src/webhooks/delivery.js';
import type { SimilarFacts } from '../../src/similar/similar-facts.js';
import type { FeedbackRecord } from '../../src/webhooks/feedback-record.js';
import { longReport } from '../helpers/long-report.js';
import { startRedisServer, type RedisServer } from '../helpers/redis-server.js';
import { testGrouping } from '../helpers/test-grouping.js';

// A private server: its command counts are this test's alone.
/** Grouping on the test's Redis, as a worker has it, keeping `keep` deliveries per project. */
function groupingKeeping(keep: number) {
  return testGrouping({ connection, prefix: 'fr', keep });
}

let server: RedisServer;
let connection: RedisConnection;
beforeEach(async () => {
  server = await startRedisServer();
  connection = createWorkerConnection(server.url, createLogger({ level: 'silent' }));
});
afterEach(async () => {
  connection.disconnect();
  await server.stop();
});

/**
 * The commands clients send while `work` runs (not those scripts run), as MONITOR on a second
 * connection sees them, in the order the server ran them.
 */
async function commandsSent(work: () => Promise<unknown>): Promise<string[]> {
  const watcher = new Redis(server.url);
  const monitor = await watcher.monitor();
  const sent: string[] = [];
  let sawEnd: () => void = () => {};
  const ended = new Promise<void>((resolve) => (sawEnd = resolve));
  const end = `end-of-work-${process.pid}`;
  monitor.on('monitor', (_time: string, args: string[], source: string) => {
    if (args[0]?.toLowerCase() === 'echo' && args[1] === end) sawEnd();
    else if (!source.includes('lua')) sent.push(args[0]!.toLowerCase());
  });
  try {
    await work();
    // Commands reach MONITOR in the order they ran: once this one is seen, all are.
    await connection.echo(end);
    await ended;
  } finally {
    monitor.disconnect();
    watcher.disconnect();
  }
  return sent;
}

describe('grouping a project in batches (group commit)', () => {
  it('groups concurrent deliveries of one project in about two round trips per batch, as one at a time would', async () => {
    const records = readFileSync(
      new URL('../fixtures/similar-webapp-200.jsonl', import.meta.url),
      'utf8',
    )
      .trim()
      .split('\n')
      .map((line) => (JSON.parse(line) as { record: FeedbackRecord }).record);
    const grouping = groupingKeeping(100_000);
    const receivedAt = new Date().toISOString();

    // All routed at once, as a worker's concurrency would if it had that many.
    let facts: SimilarFacts[] = [];
    const sent = await commandsSent(async () => {
      facts = await Promise.all(
        records.map((record) =>
          grouping.group({
            key: keyOfRecord(record.id),
            event: 'feedback.created',
            receivedAt,
            record,
          }),
        ),
      );
    });

    // The first delivery starts a turn alone; the others wait for it and go in full batches,
    // two scripts each and nothing else (the enter script read the catch-up back). A script the
    // server lacks is sent again as EVAL: MONITOR shows only the run, not the EVALSHA refused.
    const batches = 1 + Math.ceil((records.length - 1) / MOST_PER_BATCH);
    expect(sent.filter((command) => command !== 'evalsha' && command !== 'eval')).toEqual([]);
    expect(sent).toHaveLength(2 * batches);

    // The same partition as the in-memory engine, report by report: a delivery that matches
    // an earlier one of its own batch joins that one's group.
    const inMemory = new SimilarGrouper();
    const expected = records.map((record) => inMemory.add(keyOfRecord(record.id), record).group);
    expect(facts.map((fact) => fact.group.first.key)).toEqual(expected);
    expect(new Set(expected).size).toBeLessThan(records.length);
    // Each group's size as it grew, one delivery at a time.
    const sizes = new Map<string, number>();
    const expectedSizes = expected.map((first) => {
      sizes.set(first, (sizes.get(first) ?? 0) + 1);
      return sizes.get(first);
    });
    expect(facts.map((fact) => fact.group.size)).toEqual(expectedSizes);
  });

  it('stores nothing of a delivery whose entry a later one of its batch dropped past the count', async () => {
    const keep = 5;
    const grouping = groupingKeeping(keep);
    const receivedAt = new Date().toISOString();
    // One batch of ten alike: the last five drop the first five as they enter.
    const facts = await Promise.all(
      Array.from({ length: 2 * keep }, (_, i) =>
        grouping.group({
          key: keyOfRecord(`fb_${i}`),
          event: 'feedback.created',
          receivedAt,
          record: { id: `fb_${i}`, project_id: 'prj', title: 'Checkout page crashes on submit' },
        }),
      ),
    );
    expect(facts).toHaveLength(2 * keep);
    const keys = projectKeys('fr', 'prj');
    const entries = new Set(
      (await connection.xrange(keys.docs, '-', '+')).map(
        ([, fields]) => fields[fields.indexOf('r') + 1],
      ),
    );
    expect(entries.size).toBe(keep);
    // Every stored line and every member is of a delivery whose entry the stream keeps.
    const stored = (await connection.hkeys(keys.of)).map((key) => key.slice(key.indexOf(':') + 1));
    expect(stored.sort()).toEqual([...entries].sort());
    for (const group of await connection.zrange(keys.groups, '0', '-1')) {
      for (const member of await connection.zrange(groupMembersKey(keys, group), '0', '-1')) {
        expect(entries.has(member.slice(member.indexOf(':') + 1)), member).toBe(true);
      }
    }
  });

  it('puts many copies of a long report in one group, each counted once, past the postings a query reads', async () => {
    const grouping = groupingKeeping(100_000);
    const receivedAt = new Date().toISOString();
    const copies = 4 * MOST_POSTINGS_PER_TERM + 200;
    const facts = await Promise.all(
      Array.from({ length: copies }, (_, i) =>
        grouping.group({
          key: keyOfRecord(`fb_${i}`),
          event: 'feedback.created',
          receivedAt,
          // More than 80 terms: each copy keeps some, chosen by their rarity among the groups.
          record: { id: `fb_${i}`, project_id: 'prj', ...longReport(1) },
        }),
      ),
    );
    expect(new Set(facts.map((fact) => fact.group.first.key))).toEqual(
      new Set([keyOfRecord('fb_0')]),
    );
    expect(facts.map((fact) => fact.group.size)).toEqual(
      Array.from({ length: copies }, (_, i) => i + 1),
    );
    const keys = projectKeys('fr', 'prj');
    const groups = await connection.zrange(keys.groups, '0', '-1');
    expect(groups).toHaveLength(1);
    expect(await connection.zcard(groupMembersKey(keys, groups[0]!))).toBe(copies);
  });
});
