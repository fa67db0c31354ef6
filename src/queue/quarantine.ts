/**
 * Authentic deliveries that could not be read (unparseable JSON, or a record that does not fit
 * the schema) are kept here byte for byte, so nothing a signed sender delivered is lost. An
 * operator lists them, reads them, deletes them, or replays them through the same validation as
 * a new delivery once the cause is fixed.
 */
import { randomUUID } from 'node:crypto';
import {
  interpretPayload,
  type InvalidPayloadIssue,
  type Interpretation,
} from '../webhooks/delivery.js';
import type { DeliveryQueue, EnqueueStatus } from './deliveries-queue.js';
import type { RedisConnection } from './redis.js';
import { createReplicatedWrites, type ReplicatedWrites } from './replicated-writes.js';

export interface QuarantineEntry {
  readonly id: string;
  /** When the receiver got the delivery, ISO 8601 UTC. */
  readonly receivedAt: string;
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

export type NewQuarantineEntry = Omit<QuarantineEntry, 'id'>;

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
   * @throws {QueueUnavailableError} when Redis cannot take the write; nothing was stored.
   * @throws {QueueNotReplicatedError} when too few replicas confirmed it in time; it may exist.
   */
  add(entry: NewQuarantineEntry): Promise<string>;
  /** Newest first. */
  list(options?: { offset?: number; limit?: number }): Promise<QuarantineSummary[]>;
  count(): Promise<number>;
  /**
   * The entries among the newest `within` whose id, delivery id or body (read as UTF-8) holds
   * `text`, ignoring case; newest first.
   */
  search(text: string, within: number): Promise<QuarantineSummary[]>;
  get(id: string): Promise<QuarantineEntry | undefined>;
  delete(id: string): Promise<boolean>;
  /**
   * Runs a quarantined body through the same validation as a new delivery. Queued (or found to
   * be a duplicate, or an event to ignore): the entry is removed. Still invalid: it stays.
   */
  replay(id: string, deliveries: DeliveryQueue, now?: Date): Promise<ReplayResult>;
}

export interface QuarantineOptions {
  readonly connection: RedisConnection;
  readonly prefix: string;
  /** How `add` writes and confirms. Default: on `connection`, waiting for no replica. */
  readonly writes?: ReplicatedWrites;
}

type StoredMeta = Omit<QuarantineEntry, 'id' | 'body'> & { size: number };

export function createQuarantine({
  connection,
  prefix,
  writes = createReplicatedWrites({ connection, key: prefix }),
}: QuarantineOptions): Quarantine {
  const indexKey = `${prefix}:quarantine:index`;
  const entryKey = (id: string) => `${prefix}:quarantine:entry:${id}`;

  async function readMeta(ids: string[]): Promise<Map<string, StoredMeta>> {
    const metas = new Map<string, StoredMeta>();
    if (ids.length === 0) return metas;
    const pipeline = connection.pipeline();
    for (const id of ids) pipeline.hget(entryKey(id), 'meta');
    const results = (await pipeline.exec()) ?? [];
    results.forEach(([error, meta], index) => {
      if (error) throw error;
      if (typeof meta === 'string') metas.set(ids[index]!, JSON.parse(meta) as StoredMeta);
    });
    return metas;
  }

  const quarantine: Quarantine = {
    async add(entry) {
      const id = `q-${randomUUID()}`;
      const { body, ...rest } = entry;
      const meta: StoredMeta = { ...rest, size: body.length };
      const results = await writes.store(() =>
        connection
          .multi()
          .hset(entryKey(id), 'meta', JSON.stringify(meta), 'body', body)
          .zadd(indexKey, Date.parse(entry.receivedAt), id)
          .exec(),
      );
      const failed = results?.find(([error]) => error);
      if (!results || failed)
        throw failed?.[0] ?? new Error('Redis discarded the quarantine write');
      return id;
    },

    async list({ offset = 0, limit = 50 } = {}) {
      const ids = await connection.zrevrange(indexKey, offset, offset + limit - 1);
      const metas = await readMeta(ids);
      return ids.flatMap((id) => {
        const meta = metas.get(id);
        return meta ? [{ id, ...meta }] : [];
      });
    },

    count: () => connection.zcard(indexKey),

    async search(text, within) {
      const wanted = text.toLowerCase();
      const ids = await connection.zrevrange(indexKey, 0, within - 1);
      const pipeline = connection.pipeline();
      for (const id of ids) pipeline.hmgetBuffer(entryKey(id), 'meta', 'body');
      const results = (await pipeline.exec()) ?? [];
      return ids.flatMap((id, index) => {
        const [error, fields] = results[index] ?? [];
        if (error) throw error;
        const [meta, body] = (fields ?? []) as (Buffer | null)[];
        if (!meta || !body) return [];
        const stored = JSON.parse(meta.toString('utf8')) as StoredMeta;
        const haystack = [id, stored.deliveryId ?? '', body.toString('utf8')];
        return haystack.some((field) => field.toLowerCase().includes(wanted))
          ? [{ id, ...stored }]
          : [];
      });
    },

    async get(id) {
      const [meta, body] = await connection.hmgetBuffer(entryKey(id), 'meta', 'body');
      if (!meta || !body) return undefined;
      const { size: _size, ...stored } = JSON.parse(meta.toString('utf8')) as StoredMeta;
      return { id, ...stored, body };
    },

    async delete(id) {
      const results = await connection.multi().del(entryKey(id)).zrem(indexKey, id).exec();
      return results?.[0]?.[1] === 1;
    },

    async replay(id, deliveries, now = new Date()) {
      const entry = await quarantine.get(id);
      if (!entry) return { id, status: 'not_found' };
      const outcome: Interpretation = interpretPayload(entry.body, {
        deliveryId: entry.deliveryId,
        receivedAt: now,
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
