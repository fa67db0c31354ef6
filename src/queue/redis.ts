/**
 * Redis connections by role, as BullMQ's production guide sets them. The receiver's producer
 * fails fast, so a sender gets a 503 in well under two seconds instead of waiting on a dead
 * Redis; workers wait patiently instead.
 */
import { Redis } from 'ioredis';
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
    // Commands issued in the same tick (this receiver's EXISTS and add, and those of concurrent
    // requests) go out in one socket write instead of one write each.
    enableAutoPipelining: true,
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
