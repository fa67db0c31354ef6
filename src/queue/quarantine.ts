/**
 * Authentic deliveries that could not be read (unparseable JSON, or a record that does not fit
 * the schema) are kept here byte for byte, so that a signed sender's delivery is not lost to a
 * schema the receiver got wrong. An operator lists them, reads them, deletes them, or replays
 * them through the same validation as a new delivery once the cause is fixed.
 *
 * Bounded as Sidekiq's dead set is (`DeadSet#trim`): each add drops, oldest first, the entries
 * older than the age, past the count, and past the bytes of bodies the bounds allow, in the same
 * script, and says how many it dropped. A body sent again (a sender's retry after a 503) is one
 * entry, received once more, however often it comes.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { interpretPayload, type InvalidPayloadIssue } from '../webhooks/delivery.js';
import type { DeliveryQueue, EnqueueStatus } from './deliveries-queue.js';
import { pipelineResults, type RedisConnection } from './redis.js';
import { createReplicatedWrites, type ReplicatedWrites } from './replicated-writes.js';

export interface QuarantineEntry {
  /** Made of the body and the sender's delivery id, so a body sent again is the same entry. */
  readonly id: string;
  /** When the receiver last got the delivery, ISO 8601 UTC. */
  readonly receivedAt: string;
  /** When it first got it. */
  readonly firstReceivedAt: string;
  /** How many times it got it: more than once when the sender sent it again. */
  readonly received: number;
  readonly reason: 'unparseable' | 'schema';
  readonly issues: readonly InvalidPayloadIssue[];
  /** The request headers worth keeping: content type, user agent, the signature scheme's. */
  readonly headers: Readonly<Record<string, string>>;
  /** The sender's id for the delivery, where the signature scheme has one. */
  readonly deliveryId?: string | undefined;
  /** The body exactly as received. */
  readonly body: Buffer;
}

export type QuarantineSummary = Omit<QuarantineEntry, 'body'> & { readonly size: number };

export type NewQuarantineEntry = Omit<QuarantineEntry, 'id' | 'firstReceivedAt' | 'received'>;

/** What an add did: the entry, how often it has come, and what the bounds dropped to make room. */
export interface QuarantineAdded {
  readonly id: string;
  /** 1 for a new entry; more when the same body came before and is kept. */
  readonly received: number;
  /** Entries dropped, oldest first: past the age, past the count, past the bytes. */
  readonly dropped: { readonly age: number; readonly count: number; readonly bytes: number };
}

/** What the quarantine keeps at most; each add trims to these. */
export interface QuarantineBounds {
  /** Default: 10 000 (QUARANTINE_MAX_ENTRIES). */
  readonly maxEntries?: number;
  /** Default: 7 days (QUARANTINE_MAX_AGE_DAYS); counted from when an entry was last received. */
  readonly maxAgeMs?: number;
  /** The bodies' bytes together. Default: 100 MiB (QUARANTINE_MAX_BYTES). */
  readonly maxBytes?: number;
}

export const QUARANTINE_DEFAULTS = {
  maxEntries: 10_000,
  maxAgeMs: 7 * 86_400_000,
  maxBytes: 100 * 1024 * 1024,
} as const satisfies Required<QuarantineBounds>;

/** How much of a body a search of the quarantine looks through: never whole bodies. */
export const SEARCHED_BYTES = 1024;

export type ReplayResult =
  | { readonly id: string; readonly status: EnqueueStatus | 'ignored'; readonly key?: string }
  | {
      readonly id: string;
      readonly status: 'invalid';
      readonly issues: readonly InvalidPayloadIssue[];
    }
  | { readonly id: string; readonly status: 'not_found' };

export interface Quarantine {
  /**
   * @throws {QueueUnavailableError} when Redis refused the write, or did not answer in time: then
   *   it may still land once Redis resumes.
   * @throws {QueueNotReplicatedError} when too few replicas confirmed it in time; it may exist.
   */
  add(entry: NewQuarantineEntry): Promise<QuarantineAdded>;
  /** Newest first. */
  list(options?: { offset?: number; limit?: number }): Promise<QuarantineSummary[]>;
  count(): Promise<number>;
  /**
   * The entries among the newest `within` whose id, delivery id or first SEARCHED_BYTES of body
   * (read as UTF-8) hold `text`, ignoring case; newest first. Whole bodies are not read.
   */
  search(text: string, within: number): Promise<QuarantineSummary[]>;
  get(id: string): Promise<QuarantineEntry | undefined>;
  delete(id: string): Promise<boolean>;
  /**
   * Runs a quarantined body through the same validation as a new delivery. Queued (or found to
   * be a duplicate, or an event to ignore): the entry is removed. Still invalid: it stays.
   */
  replay(id: string, deliveries: DeliveryQueue): Promise<ReplayResult>;
}

export interface QuarantineOptions {
  readonly connection: RedisConnection;
  readonly prefix: string;
  /** How `add` writes and confirms. Default: on `connection`, waiting for no replica. */
  readonly writes?: ReplicatedWrites;
  readonly bounds?: QuarantineBounds;
}

/** The first receipt's details; when it was last received is its score in the index. */
type StoredMeta = Omit<QuarantineEntry, 'id' | 'body' | 'firstReceivedAt' | 'received'> & {
  size: number;
};

const ADD = readFileSync(new URL('./quarantine-add.lua', import.meta.url), 'utf8');
const REMOVE = readFileSync(new URL('./quarantine-remove.lua', import.meta.url), 'utf8');

type WithQuarantineScripts = RedisConnection & {
  addToQuarantine(
    ...args: [index: string, entry: string, bytes: string, ...argv: (string | Buffer | number)[]]
  ): Promise<[number, number, number, number]>;
  removeFromQuarantine(index: string, entry: string, bytes: string, id: string): Promise<number>;
};

/**
 * An entry's id: a hash of what stays the same when a sender sends a delivery again, its body and
 * its delivery id (Standard Webhooks' `webhook-id`), and of nothing that changes per attempt or
 * per secret (the signature, its timestamp).
 */
export function quarantineIdOf(body: Buffer, deliveryId: string | undefined): string {
  const hash = createHash('sha256')
    .update(deliveryId ?? '')
    .update('\n')
    .update(body);
  return `q-${hash.digest('hex').slice(0, 32)}`;
}

export function createQuarantine({
  connection,
  prefix,
  writes = createReplicatedWrites({ connection, key: prefix }),
  bounds = {},
}: QuarantineOptions): Quarantine {
  const { maxEntries, maxAgeMs, maxBytes } = { ...QUARANTINE_DEFAULTS, ...bounds };
  const indexKey = `${prefix}:quarantine:index`;
  const bytesKey = `${prefix}:quarantine:bytes`;
  const entryPrefix = `${prefix}:quarantine:entry:`;
  const entryKey = (id: string) => `${entryPrefix}${id}`;
  const scripted = connection as WithQuarantineScripts;
  scripted.defineCommand('addToQuarantine', { numberOfKeys: 3, lua: ADD });
  scripted.defineCommand('removeFromQuarantine', { numberOfKeys: 3, lua: REMOVE });

  /**
   * The newest entries' summaries, each with the start of its body that a search looks through;
   * an entry gone since the index was read is left out.
   */
  async function newest(
    count: number,
    offset = 0,
  ): Promise<{ summary: QuarantineSummary; excerpt: string }[]> {
    // ZREVRANGE's stop of -1 would mean "to the end".
    if (count <= 0) return [];
    const flat = await connection.zrevrange(indexKey, offset, offset + count - 1, 'WITHSCORES');
    const pipeline = connection.pipeline();
    for (let at = 0; at < flat.length; at += 2) {
      pipeline.hmget(entryKey(flat[at]!), 'meta', 'received', 'excerpt');
    }
    const replies = pipelineResults(await pipeline.exec()) as (string | null)[][];
    return replies.flatMap(([meta, received, excerpt], index) => {
      const [id, score] = [flat[2 * index]!, Number(flat[2 * index + 1])];
      return meta
        ? [{ summary: summaryOf(id, meta, received, score), excerpt: excerpt ?? '' }]
        : [];
    });
  }

  const quarantine: Quarantine = {
    async add(entry) {
      const { body, ...rest } = entry;
      const id = quarantineIdOf(body, entry.deliveryId);
      const meta: StoredMeta = { ...rest, size: body.length };
      const excerpt = body.subarray(0, SEARCHED_BYTES).toString('utf8');
      const [received, age, count, bytes] = await writes.store(() =>
        scripted.addToQuarantine(
          indexKey,
          entryKey(id),
          bytesKey,
          id,
          JSON.stringify(meta),
          body,
          excerpt,
          Date.parse(entry.receivedAt),
          maxEntries,
          maxAgeMs,
          maxBytes,
          entryPrefix,
        ),
      );
      return { id, received, dropped: { age, count, bytes } };
    },

    async list({ offset = 0, limit = 50 } = {}) {
      return (await newest(limit, offset)).map(({ summary }) => summary);
    },

    count: () => connection.zcard(indexKey),

    async search(text, within) {
      const wanted = text.toLowerCase();
      return (await newest(within))
        .filter(({ summary, excerpt }) =>
          [summary.id, summary.deliveryId ?? '', excerpt].some((field) =>
            field.toLowerCase().includes(wanted),
          ),
        )
        .map(({ summary }) => summary);
    },

    async get(id) {
      const [[meta, received, body], score] = await Promise.all([
        connection.hmgetBuffer(entryKey(id), 'meta', 'received', 'body'),
        connection.zscore(indexKey, id),
      ]);
      if (!meta || !body) return undefined;
      const { size: _size, ...summary } = summaryOf(
        id,
        meta.toString('utf8'),
        received?.toString('utf8') ?? null,
        score === null ? undefined : Number(score),
      );
      return { ...summary, body };
    },

    async delete(id) {
      return (await scripted.removeFromQuarantine(indexKey, entryKey(id), bytesKey, id)) === 1;
    },

    async replay(id, deliveries) {
      const entry = await quarantine.get(id);
      if (!entry) return { id, status: 'not_found' };
      const outcome = interpretPayload(entry.body, {
        deliveryId: entry.deliveryId,
        receivedAt: new Date(),
      });
      if (outcome.kind === 'invalid') return { id, status: 'invalid', issues: outcome.issues };
      if (outcome.kind === 'ignored') {
        await quarantine.delete(id);
        return { id, status: 'ignored' };
      }
      const { status } = await deliveries.enqueue(outcome.delivery);
      await quarantine.delete(id);
      return { id, status, key: outcome.delivery.key };
    },
  };
  return quarantine;
}

function summaryOf(
  id: string,
  meta: string,
  received: string | null | undefined,
  lastReceived: number | undefined,
): QuarantineSummary {
  const stored = JSON.parse(meta) as StoredMeta;
  return {
    id,
    ...stored,
    // An entry kept by an older release has neither: it was received once, when it says.
    receivedAt:
      lastReceived === undefined ? stored.receivedAt : new Date(lastReceived).toISOString(),
    firstReceivedAt: stored.receivedAt,
    received: received ? Number(received) : 1,
  };
}
