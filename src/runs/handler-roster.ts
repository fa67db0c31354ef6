/**
 * The handlers workers have: each worker writes its own at start and again every few seconds
 * while it runs (name, attempts and events), so the console can offer them by name, a backfill
 * can give a new run the attempts its handler has, and a worker routes a delivery to the handlers
 * other workers have, and checks the group-size windows they declare (runtime.ts). A handler is offered for OFFERED_FOR_SECONDS after the last
 * worker that has it wrote it (started, or stopped); its run queue is listed (the dead letter,
 * the reader) as long as its failed runs may be kept.
 */
import type { RedisConnection } from '../queue/redis.js';
import type { SimilarWindow } from '../similar/similar-facts.js';
import { isSimilarWindow } from '../similar/similar-window.js';

export interface RosterEntry {
  readonly name: string;
  readonly attempts: number;
  /** The events it takes; absent when written by a release that did not say. */
  readonly events?: readonly string[];
  /**
   * The group-size windows it declares (defineHandler's `similarWindows`); absent when it
   * declares none, or was written by a release that did not say. Stored as [atLeast, withinMs].
   */
  readonly similarWindows?: readonly SimilarWindow[];
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
  const fields = handlers.flatMap(({ name, attempts, events, similarWindows = [] }) => [
    name,
    JSON.stringify({
      attempts,
      events,
      at,
      ...(similarWindows.length > 0
        ? { windows: similarWindows.map(({ atLeast, withinMs }) => [atLeast, withinMs]) }
        : {}),
    }),
  ]);
  await connection
    .multi()
    .hset(rosterKey(prefix), ...fields)
    .expire(rosterKey(prefix), ROSTER_TTL_SECONDS)
    .exec();
}

export async function readRoster(
  connection: RedisConnection,
  prefix: string,
  {
    includeRetired = false,
    writtenWithinMs,
  }: {
    /** Also the handlers no longer offered, whose queues may still hold failed runs. */
    includeRetired?: boolean;
    /** Only the handlers a worker wrote this recently: the ones running workers have. */
    writtenWithinMs?: number;
  } = {},
): Promise<RosterEntry[]> {
  const within =
    writtenWithinMs ?? (includeRetired ? ROSTER_TTL_SECONDS : OFFERED_FOR_SECONDS) * 1000;
  const stored = await connection.hgetall(rosterKey(prefix));
  return Object.entries(stored)
    .flatMap(([name, value]): RosterEntry[] => {
      try {
        const { attempts, events, at, windows } = JSON.parse(value) as {
          attempts?: unknown;
          events?: unknown;
          at?: unknown;
          windows?: unknown;
        };
        // A handler no worker has started with for a while was taken out.
        const recent = typeof at === 'number' && Date.now() - at < within;
        if (typeof attempts !== 'number' || !recent) return [];
        const named = Array.isArray(events) && events.every((event) => typeof event === 'string');
        const similarWindows = windowsOf(windows);
        return [
          {
            name,
            attempts,
            ...(named ? { events: events as string[] } : {}),
            ...(similarWindows.length > 0 ? { similarWindows } : {}),
          },
        ];
      } catch {
        return [];
      }
    })
    .sort((a, b) => a.name.localeCompare(b.name));
}

/** The windows of a roster entry; none for an entry without (an older release's) or a bad one. */
function windowsOf(stored: unknown): SimilarWindow[] {
  if (!Array.isArray(stored)) return [];
  const windows = stored.map((pair: unknown) =>
    Array.isArray(pair) ? { atLeast: pair[0] as unknown, withinMs: pair[1] as unknown } : undefined,
  );
  return windows.every(isSimilarWindow) ? windows : [];
}
