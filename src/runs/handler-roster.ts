/**
 * The handlers workers have: each worker writes its own at start and again every hour while it
 * runs (name and attempts), so the console can offer them by name and a backfill can give a new
 * run the attempts its handler has. A handler is offered for OFFERED_FOR_SECONDS after the last
 * worker that has it wrote it (started, or stopped); its run queue is listed (the dead letter,
 * the reader) as long as its failed runs may be kept.
 */
import type { RedisConnection } from '../queue/redis.js';

export interface RosterEntry {
  readonly name: string;
  readonly attempts: number;
}

/** A handler no worker has started with for a week is no longer offered. */
const OFFERED_FOR_SECONDS = 7 * 86_400;
/** Its queue is still read until its failed runs are gone (HANDLER_RUN_RETENTION: 30 days). */
const ROSTER_TTL_SECONDS = 31 * 86_400;

const rosterKey = (prefix: string) => `${prefix}:handler-roster`;

export async function announceHandlers(
  connection: RedisConnection,
  prefix: string,
  handlers: readonly RosterEntry[],
): Promise<void> {
  if (handlers.length === 0) return;
  const at = Date.now();
  const fields = handlers.flatMap(({ name, attempts }) => [name, JSON.stringify({ attempts, at })]);
  await connection
    .multi()
    .hset(rosterKey(prefix), ...fields)
    .expire(rosterKey(prefix), ROSTER_TTL_SECONDS)
    .exec();
}

export async function readRoster(
  connection: RedisConnection,
  prefix: string,
  /** Also the handlers no longer offered, whose queues may still hold failed runs. */
  { includeRetired = false }: { includeRetired?: boolean } = {},
): Promise<RosterEntry[]> {
  const within = (includeRetired ? ROSTER_TTL_SECONDS : OFFERED_FOR_SECONDS) * 1000;
  const stored = await connection.hgetall(rosterKey(prefix));
  return Object.entries(stored)
    .flatMap(([name, value]) => {
      try {
        const { attempts, at } = JSON.parse(value) as { attempts?: unknown; at?: unknown };
        // A handler no worker has started with for a while was taken out.
        const recent = typeof at === 'number' && Date.now() - at < within;
        return typeof attempts === 'number' && recent ? [{ name, attempts }] : [];
      } catch {
        return [];
      }
    })
    .sort((a, b) => a.name.localeCompare(b.name));
}
