/**
 * Tells, for the errors of commands on a connection, a Redis outage from a bug: an outage becomes
 * a QueueUnavailableError (the console answers it 503 with Retry-After; the executor gives the
 * attempt back), and is logged once, not once per request or run that meets it. The next outage,
 * after the connection was ready again or a quiet minute (a Redis out of memory, say, refuses
 * writes on a connection that stays ready), is logged again.
 */
import { QueueUnavailableError } from '../errors.js';
import type { Logger } from '../logger.js';
import { isRedisUnavailable, type RedisConnection } from './redis.js';

/** Returns the error to pass on: a QueueUnavailableError for an outage, else `error` itself. */
export type OutageReporter = (error: unknown) => unknown;

/** Errors of an outage met further apart than this are two outages. */
const QUIET_MS = 60_000;

export function createOutageReporter(
  connection: RedisConnection,
  logger: Logger,
  what: string,
  {
    meanwhile = 'answering 503 until it is back',
    // False where no listener may be left on the connection (the worker's executor: the
    // caller's connection outlives the runtime); a quiet minute alone ends an outage then.
    endsWhenReady = true,
  }: { readonly meanwhile?: string; readonly endsWhenReady?: boolean } = {},
): OutageReporter {
  let reported = false;
  let lastMet = -Infinity;
  if (endsWhenReady) {
    connection.on('ready', () => {
      reported = false;
    });
  }
  return (error) => {
    if (!isRedisUnavailable(connection, error)) return error;
    const now = Date.now();
    if (now - lastMet >= QUIET_MS) reported = false;
    lastMet = now;
    if (!reported) {
      reported = true;
      // The message only: ioredis puts the command and its arguments on its errors.
      logger.warn(
        { error: error instanceof Error ? error.message : String(error) },
        `${what}: redis unavailable; ${meanwhile}`,
      );
    }
    return new QueueUnavailableError(error);
  };
}
