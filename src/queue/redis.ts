/**
 * Redis connections by role, as BullMQ's production guide sets them. The receiver's producer
 * fails fast, so a sender gets a 503 in well under two seconds instead of waiting on a dead
 * Redis; workers wait patiently instead.
 */
import { Redis } from 'ioredis';
import { QueueUnavailableError } from '../errors.js';
import type { Logger } from '../logger.js';

/** How long one command may take before the producer gives up on it. */
export const PRODUCER_COMMAND_TIMEOUT_MS = 1_500;

export function createProducerConnection(url: string, logger: Logger): Redis {
  const connection = new Redis(url, {
    // Refuse commands while disconnected instead of queueing them until Redis is back.
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    // A Redis that accepts the connection but does not answer (paused, swapping) still fails.
    commandTimeout: PRODUCER_COMMAND_TIMEOUT_MS,
    connectTimeout: 2_000,
    connectionName: 'feedback-receiver:producer',
    retryStrategy: (attempt) => Math.min(attempt * 100, 2_000),
  });
  reportConnectionState(connection, logger.child({ redis: 'producer' }));
  return connection;
}

/**
 * A worker's connection: it waits for Redis instead of failing, since a worker has nobody to
 * answer and should simply carry on when Redis is back (BullMQ requires this for workers).
 */
export function createWorkerConnection(url: string, logger: Logger): Redis {
  const connection = new Redis(url, {
    maxRetriesPerRequest: null,
    connectionName: 'feedback-receiver:worker',
    retryStrategy: (attempt) => Math.min(attempt * 200, 5_000),
  });
  reportConnectionState(connection, logger.child({ redis: 'worker' }));
  return connection;
}

/** Connections this process closes on purpose; losing them is not news. */
const closing = new WeakSet<Redis>();

/** Closes a connection on purpose: waits for replies in flight, and logs no warning. */
export async function closeConnection(connection: Redis): Promise<void> {
  closing.add(connection);
  await connection.quit().catch(() => connection.disconnect());
}

/** Logs when the connection is lost and when it is back, once each, not on every retry. */
function reportConnectionState(connection: Redis, logger: Logger): void {
  let down = false;
  connection.on('error', (error: Error) => {
    if (!down) logger.warn({ error: error.message }, 'redis connection failed');
    down = true;
  });
  connection.on('close', () => {
    if (!down && !closing.has(connection)) logger.warn('redis connection closed');
    down = true;
  });
  connection.on('ready', () => {
    if (down) logger.info('redis connection ready again');
    down = false;
  });
}

/** True when Redis answers a PING within the producer's command timeout. */
export async function redisAnswers(connection: Redis): Promise<boolean> {
  if (connection.status !== 'ready') return false;
  try {
    return (await connection.ping()) === 'PONG';
  } catch {
    return false;
  }
}

/**
 * Error codes with which a Redis refuses a write for a while: a replica, a failed background save
 * (MISCONF), out of memory, still loading, a primary or cluster that is down, too few replicas.
 */
const REFUSING_WRITES = new Set([
  'READONLY',
  'MISCONF',
  'OOM',
  'LOADING',
  'BUSY',
  'MASTERDOWN',
  'CLUSTERDOWN',
  'TRYAGAIN',
  'NOREPLICAS',
]);

/**
 * Whether `error`, thrown by a command on `connection`, means Redis is unavailable rather than
 * that the command was wrong: the connection is not ready (refused, lost, reconnecting), the
 * command timed out, or Redis answered with an error code of a Redis refusing writes.
 */
export function isRedisUnavailable(connection: Redis, error: unknown): boolean {
  if (connection.status !== 'ready') return true;
  if (!(error instanceof Error)) return false;
  // ioredis rejects a command past `commandTimeout` with a plain Error and this message only.
  if (error.message === 'Command timed out') return true;
  const code = error.name === 'ReplyError' ? error.message.split(' ', 1)[0] : undefined;
  return code !== undefined && REFUSING_WRITES.has(code);
}

/** Runs a write, and turns an error that means Redis is unavailable into QueueUnavailableError. */
export async function writeOrUnavailable<T>(
  connection: Redis,
  write: () => Promise<T>,
): Promise<T> {
  try {
    return await write();
  } catch (error) {
    throw isRedisUnavailable(connection, error) ? new QueueUnavailableError(error) : error;
  }
}
