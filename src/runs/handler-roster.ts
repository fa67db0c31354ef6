/**
 * The handlers workers have (name, attempts, events, windows), written by each at start and every
 * few seconds while it runs: docs/runs.md ("The queues") says who reads them, and for how long.
 * What running workers have is kept per worker, not per handler name: two workers may run a
 * handler of the same name with other rules (a rolling deploy), and each one's windows count.
 */
import { readFileSync } from 'node:fs';
import type { RedisConnection } from '../queue/redis.js';
import type { SimilarWindow } from '../similar/similar-facts.js';
import { distinctWindows, isSimilarWindow } from '../similar/similar-window.js';

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

/** The worker that writes, and how long after its last write it counts as running. */
export interface AnnouncingWorker {
  /** Its own for as long as it runs (a random UUID). */
  readonly id: string;
  readonly runningForMs: number;
}

/** A handler no worker has started with for a week is no longer offered. */
const OFFERED_FOR_SECONDS = 7 * 86_400;
/** Its queue is still read until its failed runs are gone (HANDLER_RUN_RETENTION: 30 days). */
const ROSTER_TTL_SECONDS = 31 * 86_400;

/**
 * A worker of the previous release writes only under its handlers' names, every 5 s while it
 * runs: an entry of its written in the last 30 s is a running worker's, as that release counts it.
 */
const PREVIOUS_RELEASE_RUNNING_MS = 30_000;

const rosterKey = (prefix: string) => `${prefix}:handler-roster`;
const workersKey = (prefix: string) => `${prefix}:handler-roster:workers`;

const ANNOUNCE = readFileSync(new URL('./announce-handlers.lua', import.meta.url), 'utf8');

type Scripted = RedisConnection & {
  announceHandlers(...args: (string | number)[]): Promise<unknown>;
};

/** An entry as stored: windows as [atLeast, withinMs] pairs. */
const storedEntry = ({ attempts, events, similarWindows = [] }: RosterEntry) => ({
  attempts,
  events,
  ...(similarWindows.length > 0
    ? { windows: similarWindows.map(({ atLeast, withinMs }) => [atLeast, withinMs]) }
    : {}),
});

/**
 * Writes the handlers under their names and under the worker: the entries of workers whose time
 * ran out go in the same step. A name's entry that a worker of the previous release wrote within
 * PREVIOUS_RELEASE_RUNNING_MS is left as it is: that worker says its windows there, and readers
 * count them while it runs.
 */
export async function announceHandlers(
  connection: RedisConnection,
  prefix: string,
  handlers: readonly RosterEntry[],
  worker: AnnouncingWorker,
): Promise<void> {
  if (handlers.length === 0) return;
  const at = Date.now();
  const scripted = connection as Scripted;
  // Defined once per connection: a worker announces every few seconds.
  if (!('announceHandlers' in connection)) {
    scripted.defineCommand('announceHandlers', { numberOfKeys: 2, lua: ANNOUNCE });
  }
  const ownEntry = JSON.stringify({
    until: at + worker.runningForMs,
    handlers: handlers.map((entry) => ({ name: entry.name, ...storedEntry(entry) })),
  });
  await scripted.announceHandlers(
    rosterKey(prefix),
    workersKey(prefix),
    at,
    worker.runningForMs,
    PREVIOUS_RELEASE_RUNNING_MS,
    ROSTER_TTL_SECONDS,
    worker.id,
    ownEntry,
    ...handlers.flatMap((entry) => [
      entry.name,
      JSON.stringify({ ...storedEntry(entry), at, worker: worker.id }),
    ]),
  );
}

/** `includeRetired`: also the handlers no longer offered, whose queues may hold failed runs. */
export async function readRoster(
  connection: RedisConnection,
  prefix: string,
  { includeRetired = false }: { includeRetired?: boolean } = {},
): Promise<RosterEntry[]> {
  const within = (includeRetired ? ROSTER_TTL_SECONDS : OFFERED_FOR_SECONDS) * 1000;
  const stored = await connection.hgetall(rosterKey(prefix));
  return Object.entries(stored)
    .flatMap(([name, value]) => {
      const read = readEntry(name, value);
      // A handler no worker has started with for a while was taken out.
      return read && Date.now() - read.at < within ? [read.entry] : [];
    })
    .sort((a, b) => a.name.localeCompare(b.name));
}

/**
 * The handlers of the running workers, an entry per worker and handler (a name appears once for
 * each worker that has it, with that worker's attempts, events and windows): those of the workers
 * whose time has not run out, and those a worker of the previous release wrote under their name
 * within PREVIOUS_RELEASE_RUNNING_MS.
 */
export async function readRunningHandlers(
  connection: RedisConnection,
  prefix: string,
): Promise<RosterEntry[]> {
  const [byName, byWorker] = await Promise.all([
    connection.hgetall(rosterKey(prefix)),
    connection.hgetall(workersKey(prefix)),
  ]);
  const now = Date.now();
  const legacy = Object.entries(byName).flatMap(([name, value]) => {
    const read = readEntry(name, value);
    return read && !read.byWorker && now - read.at < PREVIOUS_RELEASE_RUNNING_MS
      ? [read.entry]
      : [];
  });
  const running = Object.values(byWorker).flatMap((value) => {
    try {
      const { until, handlers } = JSON.parse(value) as { until?: unknown; handlers?: unknown };
      if (typeof until !== 'number' || until <= now || !Array.isArray(handlers)) return [];
      return handlers.flatMap((handler: unknown) => {
        const { name } = (handler ?? {}) as { name?: unknown };
        if (typeof name !== 'string') return [];
        const read = entryOf(name, handler);
        return read ? [read.entry] : [];
      });
    } catch {
      return [];
    }
  });
  return [...legacy, ...running];
}

/**
 * One entry per name, for routing to a handler other workers have: the most attempts, the events
 * of any (a run is added when one of them takes the delivery), and every window once, in order.
 */
export function mergeByName(entries: readonly RosterEntry[]): RosterEntry[] {
  const merged = new Map<string, RosterEntry>();
  for (const entry of entries) {
    const before = merged.get(entry.name);
    if (!before) {
      merged.set(entry.name, entry);
      continue;
    }
    const events = [...new Set([...(before.events ?? []), ...(entry.events ?? [])])];
    const similarWindows = distinctWindows([
      ...(before.similarWindows ?? []),
      ...(entry.similarWindows ?? []),
    ]).sort((a, b) => a.atLeast - b.atLeast || a.withinMs - b.withinMs);
    merged.set(entry.name, {
      name: entry.name,
      attempts: Math.max(before.attempts, entry.attempts),
      ...(before.events || entry.events ? { events } : {}),
      ...(similarWindows.length > 0 ? { similarWindows } : {}),
    });
  }
  return [...merged.values()].sort((a, b) => a.name.localeCompare(b.name));
}

/** A stored entry, when it reads as one: when it was written, and whether by a running worker. */
function readEntry(name: string, value: string): ReadEntry | undefined {
  try {
    return entryOf(name, JSON.parse(value));
  } catch {
    return undefined;
  }
}

interface ReadEntry {
  readonly entry: RosterEntry;
  readonly at: number;
  /** Written under its name by a worker that writes its own entry too (this release or later). */
  readonly byWorker: boolean;
}

function entryOf(name: string, stored: unknown): ReadEntry | undefined {
  const { attempts, events, at, windows, worker } = (stored ?? {}) as {
    attempts?: unknown;
    events?: unknown;
    at?: unknown;
    windows?: unknown;
    worker?: unknown;
  };
  if (typeof attempts !== 'number') return undefined;
  const named = Array.isArray(events) && events.every((event) => typeof event === 'string');
  const similarWindows = windowsOf(windows);
  return {
    entry: {
      name,
      attempts,
      ...(named ? { events: events as string[] } : {}),
      ...(similarWindows.length > 0 ? { similarWindows } : {}),
    },
    at: typeof at === 'number' ? at : Number.NaN,
    byWorker: worker !== undefined,
  };
}

/** The windows of a roster entry; none for an entry without (an older release's) or a bad one. */
function windowsOf(stored: unknown): SimilarWindow[] {
  if (!Array.isArray(stored)) return [];
  const windows = stored.map((pair: unknown) =>
    Array.isArray(pair) ? { atLeast: pair[0] as unknown, withinMs: pair[1] as unknown } : undefined,
  );
  return windows.every(isSimilarWindow) ? windows : [];
}
