/**
 * Redis connections by role, as BullMQ's production guide sets them, to whatever REDIS_URL names:
 * a single Redis, a primary found through Sentinel, or a cluster-mode Redis. The receiver's
 * producer fails fast, so a sender gets a 503 in well under two seconds instead of waiting on a
 * dead Redis; workers wait patiently instead.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { QueueUnavailableError } from '../errors.js';
import type { Logger } from '../logger.js';
import { parseRedisUrl, redactRedisUrl, type RedisTarget } from './redis-url.js';

/** A connection to a single Redis (directly or through Sentinel) or to a cluster-mode Redis. */
export type RedisConnection = Redis | Cluster;

/** How long one command may take before the producer gives up on it. */
export const PRODUCER_COMMAND_TIMEOUT_MS = 1_500;

/** `commandTimeoutMs` is longer when writes wait for replicas (ACK_REPLICAS). */
export function createProducerConnection(
  url: string,
  logger: Logger,
  { commandTimeoutMs = PRODUCER_COMMAND_TIMEOUT_MS }: { readonly commandTimeoutMs?: number } = {},
): RedisConnection {
  return failFastConnection(url, logger, 'producer', commandTimeoutMs);
}

/** A connection that answers its user at once while Redis is away: the producer's, the console's. */
function failFastConnection(
  url: string,
  logger: Logger,
  role: 'producer' | 'console',
  commandTimeoutMs: number,
): RedisConnection {
  const connection = connectTo(url, {
    // Refuse commands while disconnected instead of queueing them until Redis is back.
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    // A Redis that accepts the connection but does not answer (paused, swapping) still fails.
    commandTimeout: commandTimeoutMs,
    connectTimeout: 2_000,
    connectionName: `feedback-receiver:${role}`,
    retryStrategy: (attempt) => Math.min(attempt * 100, 2_000),
  });
  reportConnectionState(connection, logger.child({ redis: role }));
  return connection;
}

/** How long one of the console's reads may take; they are bigger than a delivery's write. */
export const CONSOLE_COMMAND_TIMEOUT_MS = 5_000;

/**
 * The console's own connection (its pages, its API, bull-board): it fails fast like the
 * producer's, and an operator's big reads queue on it, never ahead of a sender's delivery on the
 * producer's.
 */
export function createConsoleConnection(url: string, logger: Logger): RedisConnection {
  return failFastConnection(url, logger, 'console', CONSOLE_COMMAND_TIMEOUT_MS);
}

/**
 * A worker's connection: it waits for Redis instead of failing, since a worker has nobody to
 * answer and should simply carry on when Redis is back (BullMQ requires this for workers).
 */
export function createWorkerConnection(url: string, logger: Logger): RedisConnection {
  const connection = connectTo(url, {
    maxRetriesPerRequest: null,
    connectionName: 'feedback-receiver:worker',
    retryStrategy: (attempt) => Math.min(attempt * 200, 5_000),
  });
  reportConnectionState(connection, logger.child({ redis: 'worker' }));
  return connection;
}

/** What a role decides about its connections; the rest comes from REDIS_URL. */
type RoleOptions = Pick<
  RedisOptions,
  | 'enableOfflineQueue'
  | 'maxRetriesPerRequest'
  | 'commandTimeout'
  | 'connectTimeout'
  | 'connectionName'
  | 'retryStrategy'
>;

function connectTo(url: string, options: RoleOptions): RedisConnection {
  const target: RedisTarget = parseRedisUrl(url);
  // After a failover the old primary may come back as a replica, and a managed "primary
  // endpoint" may still hold a connection to the node that was demoted: a write then gets
  // READONLY. Reconnecting finds the primary again (through the sentinels, the DNS name, or the
  // cluster's slots); the write itself is answered 503 and retried by its sender.
  const reconnectOnError = (error: Error) => error.message.startsWith('READONLY');
  switch (target.kind) {
    case 'single':
      return new Redis(url, { ...options, reconnectOnError });
    case 'sentinel':
      return new Redis({
        ...options,
        reconnectOnError,
        sentinels: target.sentinels.map(({ host, port }) => ({ host, port })),
        name: target.masterName,
        username: target.username,
        password: target.password,
        sentinelUsername: target.sentinelUsername,
        sentinelPassword: target.sentinelPassword,
        ...(target.tls ? { tls: {}, enableTLSForSentinelMode: true } : {}),
        // Reconnect as soon as a sentinel announces a new primary, not when the old one fails.
        failoverDetector: true,
      });
    case 'cluster': {
      const { retryStrategy, enableOfflineQueue, ...nodeOptions } = options;
      return new Cluster(
        target.nodes.map(({ host, port }) => ({ host, port })),
        {
          ...(enableOfflineQueue === undefined ? {} : { enableOfflineQueue }),
          ...(retryStrategy ? { clusterRetryStrategy: retryStrategy } : {}),
          // With TLS, connect to nodes by the names the cluster gives, not by their addresses,
          // so each certificate is checked against its name (ioredis's advice for managed
          // clusters such as ElastiCache).
          ...(target.tls ? { dnsLookup: keepHostname } : {}),
          redisOptions: {
            ...nodeOptions,
            reconnectOnError,
            username: target.username,
            password: target.password,
            ...(target.tls ? { tls: {} } : {}),
          },
        },
      );
    }
  }
}

const keepHostname = (address: string, callback: (error: null, address: string) => void) =>
  callback(null, address);

/** REDIS_URL names a Redis this process could not use at start. */
export class RedisUnreachableError extends Error {
  override readonly name = 'RedisUnreachableError';
}

/** How long a process waits at start for REDIS_URL to answer before it gives up. */
export const START_TIMEOUT_MS = 10_000;

/** How long a one-off command lets connections be refused at start before it gives up on REDIS_URL. */
export const REFUSED_FOR_MS = 1_000;

const NOTHING_LISTENS = 'nothing listens there (connection refused); is Redis running?';

/**
 * Waits until the connection is ready. A Redis that refuses the credentials fails at once; one
 * that cannot be reached fails after START_TIMEOUT_MS, or, where nothing listens, once its
 * connections have been refused for `refusedForMs`. The message names REDIS_URL, with the password hidden.
 *
 * A one-off command passes REFUSED_FOR_MS: its user is waiting, and a wrong port is the likely
 * cause. A service keeps the whole timeout: started a moment before its Redis (no start order, as
 * in Kubernetes), it must wait for it rather than exit.
 *
 * @throws {RedisUnreachableError}
 */
export async function waitForRedis(
  connection: RedisConnection,
  url: string,
  { refusedForMs = Number.POSITIVE_INFINITY }: { readonly refusedForMs?: number } = {},
): Promise<void> {
  if (connection.status === 'ready') return;
  let lastError: Error | undefined;
  let refusedSince: number | undefined;
  let onReady!: () => void;
  let onError!: (error: Error) => void;
  let timer: NodeJS.Timeout | undefined;
  try {
    await new Promise<void>((resolve, reject) => {
      const fail = (reason: string) =>
        reject(
          new RedisUnreachableError(
            `REDIS_URL: cannot use Redis at ${redactRedisUrl(url)}: ${reason}`,
          ),
        );
      onReady = resolve;
      onError = (error) => {
        lastError = error;
        // Redis answered, and said no (a wrong password or user): waiting will not help.
        if (error.name === 'ReplyError') fail(error.message);
        // Nothing listens there, and nothing came to listen for a while: most likely a wrong
        // port or a Redis that is not running, which waiting out the whole timeout will not
        // change. A Redis that is a moment from listening (a restart) still gets that while.
        if ((error as NodeJS.ErrnoException).code === 'ECONNREFUSED') {
          refusedSince ??= Date.now();
          if (Date.now() - refusedSince >= refusedForMs) {
            fail(NOTHING_LISTENS);
          }
        } else {
          refusedSince = undefined;
        }
      };
      connection.on('ready', onReady);
      connection.on('error', onError);
      timer = setTimeout(
        () =>
          fail(
            refusedSince !== undefined
              ? NOTHING_LISTENS
              : `no answer within ${START_TIMEOUT_MS / 1000} s (${lastError?.message ?? 'no error reported'})`,
          ),
        START_TIMEOUT_MS,
      );
    });
  } finally {
    clearTimeout(timer);
    connection.off('ready', onReady);
    connection.off('error', onError);
  }
}

/** Connections this process closes on purpose; losing them is not news. */
const closing = new WeakSet<RedisConnection>();

/** Another connection to the same Redis, with the same options (and none of the listeners). */
export function duplicateConnection(connection: RedisConnection): RedisConnection {
  // The same call either way: TypeScript cannot call a method on the union of two overloads.
  return connection instanceof Cluster ? connection.duplicate() : connection.duplicate();
}

/** How long closing waits on Redis (replies in flight, last writes) before it goes on. */
export const CLOSE_WITHIN_MS = 2_000;

/** Whether `promise` settled within `ms`; it goes on either way. */
export async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  const settled = promise.then(
    () => true,
    () => true,
  );
  return Promise.race([settled, sleep(ms, false, { ref: false })]);
}

/**
 * Closes a connection on purpose: waits for replies in flight (at most CLOSE_WITHIN_MS, so a
 * Redis that is away cannot hold a shutdown), and logs no warning.
 */
export async function closeConnection(connection: RedisConnection): Promise<void> {
  closing.add(connection);
  const quit = connection.quit().then(
    () => true,
    () => false,
  );
  if (!(await Promise.race([quit, sleep(CLOSE_WITHIN_MS, false, { ref: false })]))) {
    connection.disconnect();
  }
}

/** Logs when the connection is lost and when it is back, once each, not on every retry. */
function reportConnectionState(connection: RedisConnection, logger: Logger): void {
  // Until the first connection, failures are the start's to report: waitForRedis says why in one
  // sentence, and a warning here would only come before it, in another form.
  let connected = false;
  let down = false;
  connection.on('error', (error: Error) => {
    if (!down)
      logger[connected ? 'warn' : 'debug']({ error: error.message }, 'redis connection failed');
    down = true;
  });
  connection.on('close', () => {
    if (!down && !closing.has(connection))
      logger[connected ? 'warn' : 'debug']('redis connection closed');
    down = true;
  });
  connection.on('ready', () => {
    if (down) logger[connected ? 'info' : 'debug']('redis connection ready again');
    connected = true;
    down = false;
  });
}

/** True when Redis answers a PING within the producer's command timeout. */
export async function redisAnswers(connection: RedisConnection): Promise<boolean> {
  if (connection.status !== 'ready') return false;
  try {
    return (await connection.ping()) === 'PONG';
  } catch {
    return false;
  }
}

/** A pipeline's replies, in order; the first error among them is thrown. */
export function pipelineResults(answers: [Error | null, unknown][] | null): unknown[] {
  return (answers ?? []).map(([error, value]) => {
    if (error) throw error;
    return value;
  });
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
 * Codes of the socket errors of a connection to a Redis that is away: refused, reset, timed out,
 * unreachable, its name not found. A connection reports them as it retries.
 */
const SOCKET_FAILURES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/**
 * Whether `error`, reported by `connection` or thrown by one of its commands, is one of a lost
 * connection rather than a Redis that answered: the connection is not ready (refused, lost,
 * reconnecting), or a socket failed (another connection to the same Redis may report it after
 * this one is ready again).
 */
export function isConnectionLost(connection: RedisConnection, error: unknown): boolean {
  if (connection.status !== 'ready') return true;
  const code = error instanceof Error ? (error as NodeJS.ErrnoException).code : undefined;
  return code !== undefined && SOCKET_FAILURES.has(code);
}

/**
 * Whether `error`, thrown by a command on `connection`, means Redis is unavailable rather than
 * that the command was wrong: the connection is lost, the command timed out, or Redis answered
 * with an error code of a Redis refusing writes.
 */
export function isRedisUnavailable(connection: RedisConnection, error: unknown): boolean {
  if (isConnectionLost(connection, error)) return true;
  if (!(error instanceof Error)) return false;
  // ioredis rejects a command past `commandTimeout` with a plain Error and this message only.
  if (error.message === 'Command timed out') return true;
  const code = error.name === 'ReplyError' ? error.message.split(' ', 1)[0] : undefined;
  return code !== undefined && REFUSING_WRITES.has(code);
}

/** Runs a write, and turns an error that means Redis is unavailable into QueueUnavailableError. */
export async function writeOrUnavailable<T>(
  connection: RedisConnection,
  write: () => Promise<T>,
): Promise<T> {
  try {
    return await write();
  } catch (error) {
    throw isRedisUnavailable(connection, error) ? new QueueUnavailableError(error) : error;
  }
}
