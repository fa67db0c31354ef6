/**
 * Tells, for the errors of reads on a connection, a Redis outage from a bug: an outage becomes a
 * QueueUnavailableError (answered 503 with Retry-After), and is logged once, not once per
 * request that meets it. The next outage, after the connection was ready again, is logged again.
 */
import { QueueUnavailableError } from '../errors.js';
import type { Logger } from '../logger.js';
import { isRedisUnavailable, type RedisConnection } from './redis.js';

/** Returns the error to pass on: a QueueUnavailableError for an outage, else `error` itself. */
export type OutageReporter = (error: unknown) => unknown;

export function createOutageReporter(
  connection: RedisConnection,
  logger: Logger,
  what: string,
): OutageReporter {
  let reported = false;
  connection.on('ready', () => {
    reported = false;
  });
  return (error) => {
    if (!isRedisUnavailable(connection, error)) return error;
    if (!reported) {
      reported = true;
      // The message only: ioredis puts the command and its arguments on its errors.
      logger.warn(
        { error: error instanceof Error ? error.message : String(error) },
        `${what}: redis unavailable; answering 503 until it is back`,
      );
    }
    return new QueueUnavailableError(error);
  };
}
