/**
 * What a version before this one wrote of grouping still reads and groups (docs/upgrading.md):
 * a stream entry whose compact document is of version 2 (each 24-bit hash in 3 bytes, each count
 * in 1) or 3 (the same Rice-coded) is matched as before, whether the index reads it in a catch-up
 * or is built again from it; a
 * grouping line that keeps the arrival time itself (not ms before its entry id) and its first in
 * full, under the delivery's key (not its line field), with its key as its group's member, is
 * found and read as before; an entry's title ('t', which entries no longer keep) is still shown;
 * a delivery that entered before and had not joined joins once; such a member becomes its
 * group's first once the operator takes the first out.
 */
import { afterEach, beforeEach, expect, inject, it } from 'vitest';
import { createSimilarGroups } from '../../src/grouping/similar-groups.js';
import { groupIdOf, groupMembersKey, projectKeys } from '../../src/grouping/similar-keys.js';
import { encodeEntry, encodeGroup } from '../../src/grouping/stored-grouping.js';
import { createLogger } from '../../src/logger.js';
import { createWorkerConnection, type RedisConnection } from '../../src/queue/redis.js';
import { COUNT_STEP, type CompactDocument } from '../../src/similar/compact-document.js';
import { documentTerms } from '../../src/similar/document-terms.js';
import { bestRiceParameter, BitWriter } from '../../src/similar/rice-code.js';
import { keyOfRecord, type Delivery } from '../../src/webhooks/delivery.js';
import type { FeedbackRecord } from '../../src/webhooks/feedback-record.js';
import { createTestWorkerEnv, type TestWorkerEnv } from '../helpers/test-worker.js';
import { testGrouping } from '../helpers/test-grouping.js';

const PROJECT = 'prj_shop';
const HOUR_MS = 60 * 60 * 1000;

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

function grouping() {
  return testGrouping({ connection, prefix: env.prefix, ttlSeconds: 24 * 3600 });
}

function checkout(n: number): FeedbackRecord {
  return {
    id: `fb_pay_${n}`,
    project_id: PROJECT,
    title: 'Pay button stays grey at checkout',
    description: `When I click pay on the checkout page nothing happens and the button stays grey (${n}).`,
    url: 'https://shop.example/checkout',
  };
}

/**
 * A short record's terms as versions 2 and 3 kept them: each term's hash folded to 24 bits (the
 * top byte into the rest), its count in quarters.
 */
function wideDocument(record: FeedbackRecord): CompactDocument {
  const counts = new Map<number, number>();
  for (const [hash, count] of documentTerms(record)) {
    const wide = ((hash >>> 24) ^ hash) & 0xffffff;
    counts.set(wide, (counts.get(wide) ?? 0) + count);
  }
  expect(counts.size).toBeLessThanOrEqual(80);
  const hashes = Uint32Array.from(counts.keys()).sort();
  return {
    hashes,
    counts: Uint8Array.from(hashes, (hash) => Math.round(counts.get(hash)! / COUNT_STEP)),
  };
}

/** A compact document as version 2 stored it: each hash in 3 bytes (little-endian), each count in 1. */
function version2(document: CompactDocument): Buffer {
  const n = document.hashes.length;
  const bytes = Buffer.alloc(2 + 4 * n);
  bytes[0] = 2;
  bytes[1] = n;
  document.hashes.forEach((hash, i) => bytes.writeUIntLE(hash, 2 + 3 * i, 3));
  bytes.set(document.counts, 2 + 3 * n);
  return bytes;
}

/** As version 3 stored it: the Rice-coded gaps of the 24-bit hashes, then the counts less one. */
function version3(document: CompactDocument): Buffer {
  const gaps = document.hashes.map((hash, i) =>
    i === 0 ? hash : hash - document.hashes[i - 1]! - 1,
  );
  const counts = document.counts.map((count) => count - 1);
  const hashCode = bestRiceParameter(gaps, 23);
  const countCode = bestRiceParameter(counts, 7);
  const bits = new BitWriter(hashCode.bits + countCode.bits);
  for (const gap of gaps) bits.writeRice(gap, hashCode.k);
  for (const count of counts) bits.writeRice(count, countCode.k);
  const header = [3, document.hashes.length, hashCode.k | (countCode.k << 5)];
  return Buffer.from([...header, ...bits.finish()]);
}

const WRITTEN_BY = { 2: version2, 3: version3 } as const;

/** The stream entry an earlier worker wrote of a delivery, with its title; its id. */
async function entryBefore(
  record: FeedbackRecord,
  version: keyof typeof WRITTEN_BY = 2,
): Promise<string> {
  const keys = projectKeys(env.prefix, PROJECT);
  return (await env.connection.xadd(
    keys.docs,
    '*',
    ...['k', '', 'r', record.id, 't', record.title as string, 'd'],
    WRITTEN_BY[version](wideDocument(record)),
  )) as string;
}

/** The entry and grouping line an earlier worker wrote of a delivery that started its group. */
async function writtenBefore(
  record: FeedbackRecord,
  at: number,
  version: keyof typeof WRITTEN_BY = 2,
): Promise<string> {
  const keys = projectKeys(env.prefix, PROJECT);
  const id = await entryBefore(record, version);
  const first = `${Buffer.byteLength(record.id)}:${record.id}`;
  await env.connection.hset(keys.of, keyOfRecord(record.id), `${id}||1|${at}|||${first}`);
  await env.connection.zadd(keys.groups, at, id);
  return id;
}

function delivery(record: FeedbackRecord): Delivery {
  return {
    key: keyOfRecord(record.id),
    event: 'feedback.created',
    receivedAt: new Date().toISOString(),
    record,
  };
}

it.each([2, 3] as const)(
  'matches and joins a delivery whose entry an earlier version wrote (document version %i)',
  async (version) => {
    const worker = grouping();
    // The worker's index has read the stream before the old entry (a catch-up reads it).
    await worker.group(
      delivery({ id: 'fb_other', project_id: PROJECT, title: 'Dark mode please' }),
    );
    const arrived = Date.now() - HOUR_MS;
    const old = await writtenBefore(checkout(0), arrived, version);
    const facts = await worker.group(delivery(checkout(1)));
    expect(facts.matches[0]).toMatchObject({ recordId: 'fb_pay_0' });
    expect(facts.matches[0]!.score).toBeGreaterThan(0.9);
    expect(facts.group).toEqual({
      id: groupIdOf(PROJECT, old),
      size: 2,
      first: { key: keyOfRecord('fb_pay_0'), recordId: 'fb_pay_0' },
    });

    // A worker that starts builds its index from the stream, version 2 entries included.
    const fresh = await grouping().group(delivery(checkout(2)));
    expect(fresh.matches.map((match) => match.recordId)).toContain('fb_pay_0');
    expect(fresh.group.id).toBe(groupIdOf(PROJECT, old));
    expect(fresh.group.size).toBe(3);

    // The old line's arrival is the first's place among the members, and what the console shows.
    const keys = projectKeys(env.prefix, PROJECT);
    expect(await env.connection.zscore(groupMembersKey(keys, old), keyOfRecord('fb_pay_0'))).toBe(
      String(arrived),
    );
    const reader = createSimilarGroups({
      connection: env.connection,
      prefix: env.prefix,
      ttlSeconds: 24 * 3600,
    });
    // Its title is the entry's own ('t'); the deliveries after it have none in the stream, and no
    // history here (as once their history entries are gone): an empty title.
    expect((await reader.get(groupIdOf(PROJECT, old)))!.first).toMatchObject({
      key: keyOfRecord('fb_pay_0'),
      title: 'Pay button stays grey at checkout',
      at: arrived,
    });
    expect((await reader.list({ sinceMs: arrived - 1 }))[0]!.first.title).toBe(
      'Pay button stays grey at checkout',
    );
    expect((await reader.ofDelivery(keyOfRecord('fb_pay_2'), PROJECT))!.matches).toEqual([
      expect.objectContaining({ recordId: 'fb_pay_0', title: 'Pay button stays grey at checkout' }),
      expect.objectContaining({ recordId: 'fb_pay_1', title: '' }),
    ]);
    expect((await reader.asRouted(keyOfRecord('fb_pay_0'), PROJECT))!.group.first).toEqual({
      key: keyOfRecord('fb_pay_0'),
      recordId: 'fb_pay_0',
    });
    expect((await reader.get(groupIdOf(PROJECT, old)))!.deliveries).toEqual(
      ['fb_pay_2', 'fb_pay_1', 'fb_pay_0'].map((id) =>
        expect.objectContaining({
          key: keyOfRecord(id),
          title: id === 'fb_pay_0' ? 'Pay button stays grey at checkout' : '',
        }),
      ),
    );
    expect((await reader.ofDelivery(keyOfRecord('fb_pay_0')))!.group.size).toBe(3);

    // Routed again, the old delivery finds its line: no second entry, the same group.
    const entries = await env.connection.xlen(keys.docs);
    expect((await worker.group(delivery(checkout(0)))).group.id).toBe(groupIdOf(PROJECT, old));
    expect(await env.connection.xlen(keys.docs)).toBe(entries);

    // Taken out of its group, its old line is written again as this version writes lines.
    expect(await reader.detach(keyOfRecord('fb_pay_0'), PROJECT)).toBe('detached');
    const detached = await reader.ofDelivery(keyOfRecord('fb_pay_0'), PROJECT);
    expect(detached!.group).toMatchObject({ id: groupIdOf(PROJECT, `${old}.d`), size: 1 });
    expect((await reader.get(groupIdOf(PROJECT, `${old}.d`)))!.first.at).toBe(arrived);
    expect((await reader.ofDelivery(keyOfRecord('fb_pay_2'), PROJECT))!.group.size).toBe(2);
  },
);

it('joins once a delivery that entered before this version and had not joined', async () => {
  const keys = projectKeys(env.prefix, PROJECT);
  const old = await writtenBefore(checkout(0), Date.now() - HOUR_MS);
  // Entered by an earlier worker, which stopped before it joined: pending, under its key.
  const record = checkout(1);
  const id = await entryBefore(record);
  await env.connection.hset(keys.of, keyOfRecord(record.id), `pending:${id}`);

  const facts = await grouping().group(delivery(record));
  expect(facts.group).toMatchObject({ id: groupIdOf(PROJECT, old), size: 2 });
  expect(await env.connection.xlen(keys.docs)).toBe(2);
  expect(await env.connection.hexists(keys.of, keyOfRecord(record.id))).toBe(0);
  // Its entry id as this version writes it (stored-grouping.ts), the group relative to it.
  expect(await env.connection.hget(keys.of, record.id)).toMatch(
    new RegExp(`^${encodeEntry(id)}\\|${encodeGroup(id, old)}\\|2\\|`),
  );
});

it("makes an earlier version's member the first once the operator takes the first out", async () => {
  const keys = projectKeys(env.prefix, PROJECT);
  const at = Date.now() - HOUR_MS;
  const old = await writtenBefore(checkout(0), at);
  // Its second, as an earlier worker joined it: its line under its key with its arrival time
  // and the first in full, and both members by key.
  // In words of its own, so that its copy (below) matches it best.
  const second = { ...checkout(1), description: 'On my phone the pay button does nothing.' };
  const id = await entryBefore(second);
  await env.connection.hset(
    keys.of,
    keyOfRecord(second.id),
    `${id}|${old}|2|${at + 1}|||8:fb_pay_0`,
  );
  await env.connection.zadd(
    groupMembersKey(keys, old),
    at,
    keyOfRecord('fb_pay_0'),
    at + 1,
    keyOfRecord(second.id),
  );
  const reader = createSimilarGroups({
    connection: env.connection,
    prefix: env.prefix,
    ttlSeconds: 24 * 3600,
  });
  expect(await reader.detach(keyOfRecord('fb_pay_0'), PROJECT)).toBe('detached');

  const firstNow = { key: keyOfRecord(second.id), recordId: second.id };
  expect((await reader.get(groupIdOf(PROJECT, old)))!.first).toMatchObject({
    ...firstNow,
    at: at + 1,
  });
  expect((await reader.ofDelivery(keyOfRecord(second.id), PROJECT))!.group.first).toEqual(firstNow);
  // A copy of the second joins its group, and is told the first as it is now.
  const copy = await grouping().group(delivery({ ...second, id: 'fb_pay_2' }));
  expect(copy.group).toEqual({ id: groupIdOf(PROJECT, old), size: 2, first: firstNow });
});
