/**
 * The memory of a word's numbers in the delivery history, against a real Redis: about four bytes
 * a delivery whatever the sizes of the batches that wrote them (an appended string keeps room to
 * grow, as large again as itself, write-history.lua), and a search still finds them all.
 */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { dayOf, historyKeys } from '../../src/history/delivery-history.js';
import { createHistorySearch } from '../../src/history/history-search.js';
import { createHistoryWriter } from '../../src/history/history-writer.js';
import { createLogger } from '../../src/logger.js';
import type { Delivery } from '../../src/webhooks/delivery.js';

const TTL_SECONDS = 86_400;
const DELIVERIES = 10_000;
/**
 * Room allowed beyond what the same numbers take set whole in one key: the newest numbers (at
 * most a sixteenth of them) with room as large again, rounded up by the allocator; and a second
 * key's own bytes. Appended alone, the room was 40% to 100%.
 */
const MOST_ROOM = 3 / 16;
const KEY_OWN_BYTES = 128;

const redis = new Redis(inject('redisUrl'));
const prefixes: string[] = [];

afterAll(async () => {
  for (const prefix of prefixes) {
    const keys = await redis.keys(`${historyKeys(prefix).base}*`);
    if (keys.length > 0) await redis.del(...keys);
  }
  redis.disconnect();
});

/** A history of DELIVERIES deliveries that all have the word "grey", written `perBatch` at a time. */
async function historyWrittenBy(perBatch: number) {
  const prefix = `test-history-memory-${randomUUID().slice(0, 8)}`;
  prefixes.push(prefix);
  const writer = createHistoryWriter({
    connection: redis,
    prefix,
    ttlSeconds: TTL_SECONDS,
    logger: createLogger({ level: 'silent' }),
  });
  // One time for all: the day, and so the keys, cannot change halfway.
  const receivedAt = new Date().toISOString();
  for (let index = 0; index < DELIVERIES; index += 1) {
    const id = `fb_${index}`;
    const delivery: Delivery = {
      key: `feedback.created:${id}`,
      event: 'feedback.created',
      receivedAt,
      record: { id, title: 'Pay button stays grey' },
    };
    writer.routed(delivery, `job-${index}`, ['triage']);
    if ((index + 1) % perBatch === 0) await writer.close();
  }
  await writer.close();
  return { prefix, day: dayOf(Date.parse(receivedAt)) };
}

describe('the memory of the history’s words', () => {
  it.each([1, 5, 50])(
    'stays near four bytes a delivery when written %i at a time, and a search finds them all',
    async (perBatch) => {
      const { prefix, day } = await historyWrittenBy(perBatch);
      const keys = historyKeys(prefix);
      const wordKeys = [keys.olderOfWord(day, 'grey'), keys.word(day, 'grey')];
      let bytes = 0;
      for (const key of wordKeys) bytes += Number(await redis.memory('USAGE', key, 'SAMPLES', 0));
      // The same numbers in one string set whole: what the allocator gives them at the least.
      const whole = `${keys.base}whole`;
      const numbers = Buffer.concat(
        (await redis.mgetBuffer(...wordKeys)).flatMap((list) => (list ? [list] : [])),
      );
      expect(numbers.length).toBe(4 * DELIVERIES);
      await redis.set(whole, numbers);
      const least = Number(await redis.memory('USAGE', whole, 'SAMPLES', 0));
      expect(bytes).toBeLessThanOrEqual(least * (1 + MOST_ROOM) + KEY_OWN_BYTES);

      const history = createHistorySearch({ connection: redis, prefix, ttlSeconds: TTL_SECONDS });
      const found = await history.search({ q: 'grey', offset: DELIVERIES - 2, limit: 25 });
      expect(found.total).toBe(DELIVERIES);
      expect(found.entries.map((entry) => entry.record.id)).toEqual(['fb_1', 'fb_0']);
      const newest = await history.search({ q: 'grey stays', offset: 0, limit: 2 });
      expect(newest.entries.map((entry) => entry.record.id)).toEqual([
        `fb_${DELIVERIES - 1}`,
        `fb_${DELIVERIES - 2}`,
      ]);
    },
  );
});
