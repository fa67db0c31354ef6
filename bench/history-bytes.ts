/**
 * What the delivery history costs Redis, by key family (`e:` entries, `ids:` day hashes, `w:` and
 * `o:` word lists, ...): fills a history under a fresh prefix as the console bench does (its
 * records, through the worker's history writer), `perRound` deliveries at a time, each round
 * written before the next ("random": 1 to 60), prints MEMORY USAGE and STRLEN per delivery by
 * family, then deletes what it wrote. For a Redis of your own:
 *
 *   node dist-bench/bench/history-bytes.js redis://127.0.0.1:6390 10000 1 5 50 random
 *
 * How the console bench's "bytes per delivery" swung with load, and why: what-we-tried.md.
 */
import { Redis, type ChainableCommander } from 'ioredis';
import { pino } from 'pino';
import { historyKeys } from '../src/history/delivery-history.js';
import { createHistoryWriter } from '../src/history/history-writer.js';
import { createLogger } from '../src/logger.js';
import type { Delivery } from '../src/webhooks/delivery.js';
import type { FeedbackRecord } from '../src/webhooks/feedback-record.js';
import { feedbackRecord } from './payload.js';

const [url, countText, ...rounds] = process.argv.slice(2);
const count = Number(countText);
const redis = new Redis(url!);
const logger = createLogger({ level: 'info', destination: pino.destination('/dev/null') });

for (const perRoundText of rounds) {
  const prefix = `hb-${perRoundText}-${Date.now()}`;
  const writer = createHistoryWriter({ connection: redis, prefix, ttlSeconds: 3600, logger });
  const random = perRoundText === 'random';
  for (let index = 0; index < count;) {
    const perRound = random ? 1 + Math.floor(Math.random() * 60) : Number(perRoundText);
    const some: Delivery[] = [];
    for (let n = 0; n < perRound && index < count; n += 1, index += 1) {
      const record = feedbackRecord(`fb_${prefix}_${index}`) as FeedbackRecord;
      some.push({
        key: `feedback.created:${record.id}`,
        event: 'feedback.created',
        receivedAt: new Date().toISOString(),
        record,
      });
    }
    for (const delivery of some) writer.routed(delivery, `j-${delivery.record.id}`, ['h']);
    for (const delivery of some) {
      writer.finished(delivery, 'h', { state: 'completed', at: new Date().toISOString() });
    }
    await writer.close();
  }
  const { base } = historyKeys(prefix);
  const keys = await keysUnder(base);
  const used = await pipelined(keys, (pipeline, key) =>
    pipeline.memory('USAGE', key, 'SAMPLES', 0),
  );
  // A hash answers STRLEN with an error: its bytes are all in MEMORY USAGE.
  const lengths = await pipelined(keys, (pipeline, key) => pipeline.strlen(key));
  const families = new Map<string, { keys: number; bytes: number; strlen: number }>();
  keys.forEach((key, at) => {
    const family = /^\w+/.exec(key.slice(base.length))![0];
    const row = families.get(family) ?? { keys: 0, bytes: 0, strlen: 0 };
    row.keys += 1;
    row.bytes += Number(used[at] ?? 0);
    row.strlen += Number(lengths[at] ?? 0);
    families.set(family, row);
  });
  const entries = Number(await redis.get(`${base}seq`));
  const each = (bytes: number) => Math.round(bytes / entries);
  const total = [...families.values()].reduce((sum, row) => sum + row.bytes, 0);
  const parts = [...families]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(
      ([family, row]) =>
        `${family} ${each(row.bytes)} (${row.keys} keys, strlen ${each(row.strlen)})`,
    );
  console.log(
    `per round ${perRoundText}: ${entries} deliveries, ${each(total)} B each: ${parts.join('; ')}`,
  );
  for (let at = 0; at < keys.length; at += 500) await redis.del(...keys.slice(at, at + 500));
}
redis.disconnect();

async function keysUnder(base: string): Promise<string[]> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, some] = await redis.scan(cursor, 'MATCH', `${base}*`, 'COUNT', 1_000);
    cursor = next;
    keys.push(...some);
  } while (cursor !== '0');
  return keys;
}

/** Each key's answer, or undefined where Redis answered an error. */
async function pipelined(
  keys: readonly string[],
  command: (pipeline: ChainableCommander, key: string) => unknown,
): Promise<unknown[]> {
  const pipeline = redis.pipeline();
  for (const key of keys) command(pipeline, key);
  return ((await pipeline.exec()) ?? []).map(([error, value]) => (error ? undefined : value));
}
