/**
 * The delivery history at its cap (HISTORY_MAX_DELIVERIES), against a real Redis: past it each
 * batch drops the oldest entries, with their fields in the day's hash; a day whose deliveries are
 * all dropped loses its word lists and other keys; searches and lookups find only the newest;
 * the writer says so once.
 */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { dayOf, historyKeys } from '../../src/history/delivery-history.js';
import { createHistorySearch } from '../../src/history/history-search.js';
import { createHistoryWriter } from '../../src/history/history-writer.js';
import { createLogger } from '../../src/logger.js';
import type { Delivery } from '../../src/webhooks/delivery.js';

const CAP = 50;
const YESTERDAYS = 40;
const DELIVERIES = 120;
const BATCH = 20;
const TTL_SECONDS = 3 * 86_400;
const DAY_MS = 86_400_000;
const prefix = `test-history-cap-${randomUUID().slice(0, 8)}`;
const keys = historyKeys(prefix);
const redis = new Redis(inject('redisUrl'));
const logs: Record<string, unknown>[] = [];
let dropped = 0;
const writer = createHistoryWriter({
  connection: redis,
  prefix,
  ttlSeconds: TTL_SECONDS,
  mostKept: CAP,
  dropped: (entries) => (dropped += entries),
  logger: createLogger({
    level: 'info',
    destination: { write: (line: string) => void logs.push(JSON.parse(line)) },
  }),
});
const history = createHistorySearch({ connection: redis, prefix, ttlSeconds: TTL_SECONDS });

const today = dayOf(Date.now());
const yesterday = today - 1;

/** The first YESTERDAYS were received yesterday, the others today; one millisecond apart. */
function delivery(n: number): Delivery {
  const day = n < YESTERDAYS ? yesterday : today;
  return {
    key: `feedback.created:fb_${n}`,
    event: 'feedback.created',
    receivedAt: new Date(day * DAY_MS + n).toISOString(),
    record: { id: `fb_${n}`, feedback_id: 7000 + n, title: `Checkout broken item${n}` },
  };
}

const newest = Array.from({ length: CAP }, (_, i) => DELIVERIES - CAP + i);
const oldest = Array.from({ length: DELIVERIES - CAP }, (_, i) => i);

async function keysMatching(pattern: string): Promise<string[]> {
  const found: string[] = [];
  let cursor = '0';
  do {
    const [next, some] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    found.push(...some);
    cursor = next;
  } while (cursor !== '0');
  return found;
}

beforeAll(async () => {
  for (let start = 0; start < DELIVERIES; start += BATCH) {
    for (let n = start; n < start + BATCH; n += 1) writer.routed(delivery(n), `job-${n}`, ['h']);
    await writer.close();
  }
});

afterAll(async () => {
  const left = await keysMatching(`${prefix}:*`);
  if (left.length > 0) await redis.del(...left);
  redis.disconnect();
});

describe('the delivery history at its cap', () => {
  it('keeps the entries of the newest deliveries only, and their fields in the day hash', async () => {
    const entries = await keysMatching(`${keys.base}e:*`);
    expect(entries.sort()).toEqual(newest.map((n) => keys.entry(n + 1)).sort());
    // One `k:` and one `f:` field for each delivery kept, none for those dropped.
    expect(await redis.hlen(keys.ids(today))).toBe(2 * CAP);
  });

  it('finds the newest deliveries by key, by feedback id and by word, and none of the oldest', async () => {
    const found = await history.byKeys(newest.map((n) => delivery(n).key));
    expect(found.map((entry) => entry?.record.id)).toEqual(newest.map((n) => `fb_${n}`));
    expect(await history.byKeys(oldest.map((n) => delivery(n).key))).toEqual(
      oldest.map(() => undefined),
    );
    for (const n of [newest[0]!, newest[CAP - 1]!]) {
      for (const q of [`item${n}`, String(7000 + n)]) {
        const page = await history.search({ q, offset: 0, limit: 10 });
        expect(page.entries.map((entry) => entry.record.id)).toEqual([`fb_${n}`]);
      }
    }
    for (const n of [0, YESTERDAYS, oldest[oldest.length - 1]!]) {
      for (const q of [`item${n}`, String(7000 + n)]) {
        expect(await history.search({ q, offset: 0, limit: 10 })).toMatchObject({ total: 0 });
      }
    }
  });

  it('counts only what it keeps, with a word every delivery has or with none', async () => {
    for (const q of ['checkout', '']) {
      const page = await history.search({ q, offset: 0, limit: CAP + 10 });
      expect(page.total).toBe(CAP);
      expect(page.entries.map((entry) => entry.record.id)).toEqual(
        [...newest].reverse().map((n) => `fb_${n}`),
      );
    }
    expect(await history.size()).toBe(CAP);
  });

  it('drops every key of a day whose deliveries are all dropped', async () => {
    expect(await keysMatching(`${keys.base}*${yesterday}*`)).toEqual([]);
    expect(await redis.exists(keys.word(today, 'checkout'))).toBe(1);
  });

  it('says once that it is at its cap, and counts every entry it dropped', () => {
    expect(dropped).toBe(DELIVERIES - CAP);
    const warnings = logs.filter((log) => String(log.msg).includes('at its cap of 50'));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ level: 40 });
  });
});
