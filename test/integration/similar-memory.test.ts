/**
 * Grouping's Redis memory per delivery kept (issue 30 asks for at most 512 bytes, all keys included),
 * measured as docs/similar.md says: real reports of the shared data routed through grouping into
 * one project, then MEMORY USAGE (every element counted, SAMPLES 0) of every key grouping wrote,
 * divided by the deliveries kept.
 */
import { readFileSync } from 'node:fs';
import { afterEach, beforeEach, expect, inject, it } from 'vitest';
import { createLogger } from '../../src/logger.js';
import { createWorkerConnection, type RedisConnection } from '../../src/queue/redis.js';
import { keyOfRecord, type Delivery } from '../../src/webhooks/delivery.js';
import type { FeedbackRecord } from '../../src/webhooks/feedback-record.js';
import { createTestWorkerEnv, type TestWorkerEnv } from '../helpers/test-worker.js';
import { testGrouping } from '../helpers/test-grouping.js';

const DATA = '/work/shared/data/similar';
const DELIVERIES = 2_000;
/**
 * What this version holds (492 bytes measured, 492 to 493 from run to run on a quiet machine; 832
 * before the steps of docs/similar.md, "Cost"), with a margin for a loaded one: a match's distance
 * back and an arrival are kept in ms, so deliveries grouped more slowly take a digit more here and
 * there. Issue 30 asks for 512 (docs/similar.md, "Cost", says where the bytes are).
 */
const MOST_BYTES_PER_DELIVERY = 504;

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

/** The shared reports in their files' order, again with new ids until there are `count`. */
function reports(count: number): FeedbackRecord[] {
  const records = ['webapp-650.jsonl', 'seamonkey-1076.jsonl'].flatMap((file) =>
    readFileSync(`${DATA}/${file}`, 'utf8')
      .split('\n')
      .filter((line) => line.trim() !== '')
      .map((line) => (JSON.parse(line) as { record: FeedbackRecord }).record),
  );
  return Array.from({ length: count }, (_, n) => {
    const record = records[n % records.length]!;
    const round = Math.floor(n / records.length);
    return {
      ...record,
      id: round === 0 ? record.id : `${record.id}_${round}`,
      project_id: 'prj_eval',
    };
  });
}

async function bytesOfGrouping(): Promise<{ total: number; byKind: Record<string, number> }> {
  const byKind: Record<string, number> = {};
  let total = 0;
  let cursor = '0';
  do {
    const [next, keys] = await env.connection.scan(
      cursor,
      'MATCH',
      `${env.prefix}:similar:*`,
      'COUNT',
      1000,
    );
    cursor = next;
    for (const key of keys) {
      const bytes = Number(await env.connection.call('MEMORY', 'USAGE', key, 'SAMPLES', '0'));
      const kind = /:(docs|of|groups|projects|group|crossed)(?::|$)/.exec(key)?.[1] ?? 'other';
      byKind[kind] = (byKind[kind] ?? 0) + bytes;
      total += bytes;
    }
  } while (cursor !== '0');
  return { total, byKind };
}

it(`keeps grouping within ${MOST_BYTES_PER_DELIVERY} bytes of Redis per delivery over ${DELIVERIES} real reports`, async () => {
  const grouping = testGrouping({
    connection,
    prefix: env.prefix,
    ttlSeconds: 7 * 24 * 3600,
    windows: [{ atLeast: 5, withinMs: 3_600_000 }],
  });
  for (const record of reports(DELIVERIES)) {
    const delivery: Delivery = {
      key: keyOfRecord(record.id),
      event: 'feedback.created',
      receivedAt: new Date().toISOString(),
      record,
    };
    await grouping.group(delivery);
  }
  const { total, byKind } = await bytesOfGrouping();
  const perDelivery = Object.fromEntries(
    Object.entries(byKind).map(([kind, bytes]) => [kind, Math.round(bytes / DELIVERIES)]),
  );
  expect(
    total / DELIVERIES,
    `bytes per delivery by key: ${JSON.stringify(perDelivery)}`,
  ).toBeLessThanOrEqual(MOST_BYTES_PER_DELIVERY);
}, 120_000);
