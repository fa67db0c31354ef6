/**
 * The delivery history against a real Redis: what a worker writes (entries, outcome lines) and
 * what a search finds, newest first, by key, record id, feedback id, words and email, with state
 * filters and paging; a delivery written twice is one entry; a day past DEDUPE_TTL is not kept.
 */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { historyKeys } from '../../src/history/delivery-history.js';
import { createHistorySearch } from '../../src/history/history-search.js';
import { createHistoryWriter } from '../../src/history/history-writer.js';
import { createLogger } from '../../src/logger.js';
import type { Delivery } from '../../src/webhooks/delivery.js';
import type { FeedbackRecord } from '../../src/webhooks/feedback-record.js';

const TTL_SECONDS = 7 * 86_400;
const prefix = `test-history-${randomUUID().slice(0, 8)}`;
const redis = new Redis(inject('redisUrl'));
const writer = createHistoryWriter({
  connection: redis,
  prefix,
  ttlSeconds: TTL_SECONDS,
  logger: createLogger({ level: 'silent' }),
});
const history = createHistorySearch({ connection: redis, prefix, ttlSeconds: TTL_SECONDS });

let received = Date.now() - 60_000;
function delivery(record: FeedbackRecord, receivedAtMs = (received += 1_000)): Delivery {
  return {
    key: `feedback.created:${record.id}`,
    event: 'feedback.created',
    receivedAt: new Date(receivedAtMs).toISOString(),
    record,
  };
}

const ana = delivery({
  id: 'fb_h1',
  feedback_id: 901,
  title: 'Checkout button broken',
  rating: 1,
  project_id: 'prj_shop',
  reporter: { email: 'ana@example.com' },
});
const ben = delivery({
  id: 'fb_h2',
  title: 'Love the design',
  description: 'Smooth CHECKOUT flow',
});
const cat = delivery({ id: 'fb_h3', title: 'Überweisung schlägt fehl', description: 'Kasse' });
const old = delivery({ id: 'fb_h0', title: 'checkout long ago' }, Date.now() - 9 * 86_400_000);

beforeAll(async () => {
  writer.routed(old, 'job-0', ['triage']);
  writer.routed(ana, 'job-1', ['triage', 'notify']);
  writer.routed(ben, 'job-2', ['triage']);
  writer.routed(cat, 'job-3', ['triage']);
  // Routed again (a routing job run twice): still one entry.
  writer.routed(ana, 'job-1', ['triage', 'notify']);
  const at = new Date().toISOString();
  writer.finished(ana, 'triage', {
    state: 'completed',
    at,
    result: {
      matched: ['unhappy'],
      patch: { priority_id: 4 },
      answer: { long: 'x'.repeat(1_000) },
    },
  });
  writer.finished(ana, 'notify', { state: 'failed', at, reason: 'webhook down' });
  writer.finished(ben, 'triage', { state: 'failed', at, reason: 'API 500' });
  // Retried, then completed: the later line wins.
  writer.finished(ben, 'triage', { state: 'completed', at });
  await writer.close();
});

afterAll(async () => {
  const keys = await redis.keys(`${historyKeys(prefix).base}*`);
  if (keys.length > 0) await redis.del(...keys);
  redis.disconnect();
});

const ids = async (query: Parameters<typeof history.search>[0]) =>
  (await history.search(query)).entries.map((entry) => entry.record.id);
const page = { offset: 0, limit: 25 };

describe('the delivery history', () => {
  it('lists what it keeps newest first, one entry per delivery, and no day past the TTL', async () => {
    const found = await history.search(page);
    expect(found.entries.map((entry) => entry.record.id)).toEqual(['fb_h3', 'fb_h2', 'fb_h1']);
    expect(found).toMatchObject({ total: 3, searched: 3 });
    expect(await history.size()).toBe(3);
  });

  it.each([
    ['a delivery key', 'feedback.created:fb_h2', ['fb_h2']],
    ['a record id', 'fb_h3', ['fb_h3']],
    ['a feedback id', '901', ['fb_h1']],
    ['a word of the title or description, in any case', 'checkout', ['fb_h2', 'fb_h1']],
    ['two words, both needed', 'checkout broken', ['fb_h1']],
    ['a word with its accents', 'ÜBERWEISUNG', ['fb_h3']],
    ['a reporter email', 'ana@example.com', ['fb_h1']],
    ['a word nobody wrote', 'refund', []],
  ])('finds by %s', async (_what, q, expected) => {
    expect(await ids({ ...page, q })).toEqual(expected);
  });

  it('filters by state, alone and with words', async () => {
    expect(await ids({ ...page, state: 'failed' })).toEqual(['fb_h1']);
    expect(await ids({ ...page, state: 'done' })).toEqual(['fb_h2']);
    expect(await ids({ ...page, state: 'running' })).toEqual(['fb_h3']);
    expect(await ids({ ...page, q: 'checkout', state: 'done' })).toEqual(['fb_h2']);
  });

  it('pages with offset and limit', async () => {
    const found = await history.search({ offset: 1, limit: 1 });
    expect(found.entries.map((entry) => entry.record.id)).toEqual(['fb_h2']);
    expect(found.total).toBe(3);
  });

  it('keeps an outcome written before its entry (another worker was faster) until the entry comes', async () => {
    const dee = delivery({ id: 'fb_h4', title: 'Early bird' });
    const other = createHistoryWriter({
      connection: redis,
      prefix,
      ttlSeconds: TTL_SECONDS,
      logger: createLogger({ level: 'silent' }),
    });
    other.finished(dee, 'triage', { state: 'failed', at: new Date().toISOString(), reason: 'no' });
    await other.close();
    expect(await history.byKey(dee.key)).toBeUndefined();
    writer.routed(dee, 'job-4', ['triage']);
    await writer.close();
    expect(await history.byKey(dee.key)).toMatchObject({
      outcomes: { triage: { state: 'failed', reason: 'no' } },
    });
    expect(await ids({ ...page, q: 'early', state: 'failed' })).toEqual(['fb_h4']);
  });

  it('keeps each run’s outcome, the small part of its result, and the compact record', async () => {
    const entry = await history.byKey('feedback.created:fb_h1');
    expect(entry).toMatchObject({
      deliveryJobId: 'job-1',
      handlers: ['triage', 'notify'],
      record: {
        id: 'fb_h1',
        feedback_id: 901,
        title: 'Checkout button broken',
        rating: 1,
        project_id: 'prj_shop',
        reporter: { email: 'ana@example.com' },
      },
      outcomes: {
        triage: { state: 'completed', result: { matched: ['unhappy'], patch: { priority_id: 4 } } },
        notify: { state: 'failed', reason: 'webhook down' },
      },
    });
    expect(entry?.outcomes.triage?.result).not.toHaveProperty('answer');
    expect(await history.byKey('feedback.created:fb_h0')).toBeUndefined();
  });
  it('keeps a long title and reason to their last whole character, never half an emoji', async () => {
    const long = delivery({ id: 'fb_h6', title: `${'a'.repeat(199)}${'😀'.repeat(3)}` });
    writer.routed(long, 'job-6', ['triage']);
    const reason = `${'b'.repeat(299)}😀 and more`;
    writer.finished(long, 'triage', { state: 'failed', at: new Date().toISOString(), reason });
    await writer.close();
    const entry = await history.byKey(long.key);
    // Cut through the pair, the first half was kept alone: `\ud83d` in the API, � on the page.
    expect(entry?.record.title).toBe('a'.repeat(199));
    expect(entry?.outcomes.triage?.reason).toBe('b'.repeat(299));
  });

  it('lists a delivery once however many of its runs failed, and holds the newest outcome', async () => {
    const eve = delivery({ id: 'fb_h5', title: 'Twice unlucky' });
    // One clock reading, and each line's time given from it: read again per line, the clock of a
    // busy machine moves between readings, and `at(1)` read late equals or passes `at(2)`.
    const base = Date.now();
    const at = (ms: number) => new Date(base + ms).toISOString();
    writer.routed(eve, 'job-5', ['a', 'b']);
    writer.finished(eve, 'a', { state: 'failed', at: at(0), reason: 'a said no' });
    writer.finished(eve, 'b', { state: 'failed', at: at(0), reason: 'b said no' });
    writer.finished(eve, 'a', { state: 'failed', at: at(1), reason: 'a said no again' });
    // A worker that was slow to write: its older outcome does not win over the newer one.
    writer.finished(eve, 'b', { state: 'completed', at: at(2) });
    writer.finished(eve, 'b', { state: 'failed', at: at(1), reason: 'late line' });
    // Two outcomes of one millisecond: the line written last holds.
    writer.finished(eve, 'c', { state: 'completed', at: at(3) });
    writer.finished(eve, 'c', { state: 'failed', at: at(3), reason: 'c said no last' });
    await writer.close();
    const failed = await ids({ ...page, state: 'failed' });
    expect(failed.filter((id) => id === 'fb_h5')).toEqual(['fb_h5']);
    expect(new Set(failed).size).toBe(failed.length);
    expect((await history.byKey(eve.key))?.outcomes).toMatchObject({
      a: { state: 'failed', reason: 'a said no again' },
      b: { state: 'completed' },
      c: { state: 'failed', reason: 'c said no last' },
    });
  });
});
