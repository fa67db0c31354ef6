/**
 * Writes the history (delivery-history.ts) from the worker: an entry when a delivery is routed,
 * a line when one of its runs finishes. Writes wait at most FLUSH_EVERY_MS and go out together,
 * one script call per batch, so a delivery costs its worker a small share of one round trip; no
 * run waits for them. The history is for operators: a write that fails is logged and dropped
 * (the delivery and its runs are in their jobs all the same), and a worker that dies loses what
 * it had not yet written, never a delivery.
 */
import type { Logger } from '../logger.js';
import type { RedisConnection } from '../queue/redis.js';
import { keyOfRecord, type Delivery } from '../webhooks/delivery.js';
import {
  dayOf,
  expiryOfDay,
  historyKeys,
  ROUTING,
  storedEntry,
  storedOutcome,
  type HistoryOutcome,
} from './delivery-history.js';
import { recordWords } from './search-terms.js';

const FLUSH_EVERY_MS = 20;
/**
 * A batch's size. An entry is a few commands inside the script, and each word of the batch one
 * APPEND, whatever the number of entries that have it: one call of 50 holds Redis for about a
 * millisecond, and BullMQ's commands go between calls.
 */
const LARGEST_BATCH = 50;
/** Writes waiting while Redis is slow or away; beyond this many, new ones are dropped and counted. */
const MOST_WAITING = 20_000;

/**
 * One batch, in order. An entry is written once per delivery key (a routing that runs again, a
 * delivery sent again after a failover: the same entry); an outcome line is appended to the entry
 * of its delivery key. Another worker may finish a run before the entry of its routing is
 * written: its line waits under `pending:`, and the entry takes it when it comes.
 */
const WRITE_HISTORY = `
local base = ARGV[1]
local ops = cjson.decode(ARGV[2])
-- A word's numbers from the whole batch go out in one APPEND: entries share most words.
local postings, terms = {}, {}
local function post(term, seq, expireAt)
  local list = postings[term]
  if not list then
    list = { expireAt = expireAt }
    postings[term] = list
    terms[#terms + 1] = term
  end
  list[#list + 1] = struct.pack('>I4', tonumber(seq))
end
local function failed(day, seq, expireAt)
  post(base .. 'w:' .. day .. ':!failed', seq, expireAt)
end
for _, op in ipairs(ops) do
  local ids = base .. 'ids:' .. op.day
  if op.line then
    local seq = redis.call('HGET', ids, 'k:' .. op.key)
    if not seq then
      local pending = base .. 'pending:' .. op.day .. ':' .. op.key
      redis.call('APPEND', pending, '\\n' .. op.line)
      redis.call('PEXPIREAT', pending, op.expireAt)
    else
      local entry = base .. 'e:' .. seq
      local text = redis.call('GET', entry)
      if text then
        -- SET, not APPEND: an appended string keeps room to grow, as large again as itself.
        redis.call('SET', entry, text .. '\\n' .. op.line, 'KEEPTTL')
        if op.failed then failed(op.day, seq, op.expireAt) end
      end
    end
  elseif redis.call('HEXISTS', ids, 'k:' .. op.key) == 1 then
    -- Routed again: after a routing that failed for good, the entry says it is routed now.
    local entry = base .. 'e:' .. redis.call('HGET', ids, 'k:' .. op.key)
    local text = redis.call('GET', entry)
    if text and string.find(text, '"h":"routing","s":"f"', 1, true) then
      redis.call('SET', entry, text .. '\\n' .. op.routed, 'KEEPTTL')
    end
  else
    local seq = redis.call('INCR', KEYS[1])
    local pending = base .. 'pending:' .. op.day .. ':' .. op.key
    local early = redis.call('GET', pending) or ''
    redis.call('SET', base .. 'e:' .. seq, op.entry .. early, 'PXAT', op.expireAt)
    if early ~= '' then
      redis.call('DEL', pending)
      for line in string.gmatch(early, '[^\\n]+') do
        if cjson.decode(line).s == 'f' then failed(op.day, seq, op.expireAt) end
      end
    end
    redis.call('HSET', ids, 'k:' .. op.key, seq)
    if op.r then redis.call('HSET', ids, 'r:' .. op.r, seq) end
    if op.f then redis.call('HSET', ids, 'f:' .. op.f, seq) end
    redis.call('PEXPIREAT', ids, op.expireAt)
    redis.call('SET', base .. 'first:' .. op.day, seq, 'NX', 'PXAT', op.expireAt)
    for _, word in ipairs(op.words) do post(base .. 'w:' .. op.day .. ':' .. word, seq, op.expireAt) end
  end
end
for _, term in ipairs(terms) do
  local list = postings[term]
  -- A day's keys all expire at the same time: set it when the key is made.
  if redis.call('APPEND', term, table.concat(list)) == 4 * #list then
    redis.call('PEXPIREAT', term, list.expireAt)
  end
end
return #ops
`;

/** Each op carries its delivery's receipt time (`t`), by which a batch is ordered. */
type Op =
  | {
      t: number;
      day: number;
      expireAt: number;
      key: string;
      entry: string;
      /** The outcome line of a routing that succeeded, for an entry whose routing had failed. */
      routed: string;
      /** The record's id, when the delivery's key is not made of it. */
      r?: string;
      f?: string;
      words: string[];
    }
  | { t: number; day: number; expireAt: number; key: string; line: string; failed: boolean };

const receivedOf = (op: Op) => op.t;

export interface HistoryWriter {
  /** A worker routed the delivery to these handlers. */
  routed(delivery: Delivery, deliveryJobId: string, handlers: readonly string[]): void;
  /** A run finished: completed, or failed for good. */
  finished(delivery: Delivery, handler: string, outcome: HistoryOutcome): void;
  /** Writes what is waiting, then stops. */
  close(): Promise<void>;
}

type WithHistoryScript = RedisConnection & {
  writeHistory(seqKey: string, base: string, ops: string): Promise<number>;
};

export function createHistoryWriter(options: {
  readonly connection: RedisConnection;
  readonly prefix: string;
  readonly ttlSeconds: number;
  readonly logger: Logger;
}): HistoryWriter {
  const { prefix, ttlSeconds, logger } = options;
  const keys = historyKeys(prefix);
  const connection = options.connection as WithHistoryScript;
  connection.defineCommand('writeHistory', { numberOfKeys: 1, lua: WRITE_HISTORY });
  let waiting: Op[] = [];
  let timer: NodeJS.Timeout | undefined;
  let writing: Promise<void> = Promise.resolve();
  let failing = false;

  const flush = () => {
    timer = undefined;
    // Entries are numbered in the order they are written, and a list shows the highest first:
    // within a batch, in the order received (deliveries routed at once finish in any order).
    waiting.sort((a, b) => receivedOf(a) - receivedOf(b));
    const batches: Op[][] = [];
    for (let start = 0; start < waiting.length; start += LARGEST_BATCH) {
      batches.push(waiting.slice(start, start + LARGEST_BATCH));
    }
    waiting = [];
    // One batch after the other, so an entry is always written before its outcomes.
    writing = writing.then(async () => {
      for (const batch of batches) {
        try {
          await connection.writeHistory(keys.seq, keys.base, JSON.stringify(batch));
          if (failing) logger.info('history written again');
          failing = false;
        } catch (error) {
          if (!failing) {
            logger.warn(
              { error: (error as Error).message, lines: batch.length },
              'could not write the delivery history; its deliveries and runs are not affected',
            );
          }
          failing = true;
        }
      }
    });
  };

  let dropped = 0;
  const add = (op: Op) => {
    if (waiting.length >= MOST_WAITING) {
      if (dropped++ === 0) {
        logger.warn(
          { waiting: waiting.length },
          'the delivery history is not keeping up: dropping its lines until it does (deliveries and runs are not affected)',
        );
      }
      return;
    }
    if (dropped > 0) {
      logger.info({ dropped }, 'the delivery history keeps up again');
      dropped = 0;
    }
    waiting.push(op);
    timer ??= setTimeout(flush, FLUSH_EVERY_MS);
  };

  const when = (delivery: Delivery) => {
    const receivedAtMs = Date.parse(delivery.receivedAt);
    const day = dayOf(receivedAtMs);
    return { receivedAtMs, day, expireAt: expiryOfDay(day, ttlSeconds) };
  };

  return {
    routed(delivery, deliveryJobId, handlers) {
      const { receivedAtMs, day, expireAt } = when(delivery);
      const { record } = delivery;
      add({
        t: receivedAtMs,
        day,
        expireAt,
        key: delivery.key,
        entry: storedEntry({ key: delivery.key, deliveryJobId, record, handlers }, receivedAtMs),
        routed: storedOutcome(ROUTING, { state: 'completed', at: new Date().toISOString() }),
        ...(delivery.key === keyOfRecord(record.id) ? {} : { r: record.id }),
        // A string: Lua would print a large number in exponent form.
        ...(typeof record.feedback_id === 'number' ? { f: String(record.feedback_id) } : {}),
        words: recordWords(record),
      });
    },
    finished(delivery, handler, outcome) {
      const { receivedAtMs, day, expireAt } = when(delivery);
      add({
        t: receivedAtMs,
        day,
        expireAt,
        key: delivery.key,
        line: storedOutcome(handler, outcome),
        failed: outcome.state === 'failed',
      });
    },
    async close() {
      if (timer) clearTimeout(timer);
      flush();
      await writing;
    },
  };
}
