/**
 * Wires a running worker from a configuration: its Redis connection, the shared rate limiter,
 * the API client, the handlers (custom modules and enabled built-ins) and the runtime.
 * `feedback-receiver work` is `startWorker` and a signal handler.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { createApiClient } from './api/client.js';
import type { WorkerConfig } from './config.js';
import { startProbeServer } from './http/probe-server.js';
import type { Logger } from './logger.js';
import { createMetrics } from './metrics.js';
import { handlerRunRetention } from './runs/run-queues.js';
import { deliveryRetention } from './queue/deliveries-queue.js';
import { createRedisRateLimiter } from './queue/api-rate-limiter.js';
import {
  closeConnection,
  createWorkerConnection,
  redisAnswers,
  waitForRedis,
} from './queue/redis.js';
import type { Handler } from './worker/handler.js';
import { assertUniqueNames, HandlerLoadError, loadHandlerModules } from './worker/load-handlers.js';
import { startWorkerRuntime, type WorkerRuntime } from './worker/runtime.js';
import { loadTriageRules } from './worker/triage/rules.js';
import { createTriageHandler } from './worker/triage/triage-handler.js';

/** A running worker: its queues, for reading what became of runs, and how to stop it. */
/** How long /readyz waits for Redis's answer before it says not ready. */
const READY_WITHIN_MS = 1_000;

export interface StartedWorker extends WorkerRuntime {
  close(): Promise<void>;
}

export interface StartWorkerOptions {
  /** Handlers given in code, in addition to HANDLERS and the built-ins. */
  readonly handlers?: readonly Handler[];
  /**
   * The handlers `resolveHandlers` gave, for a caller that checked the settings before starting
   * anything else (`start`, before its redis-server); HANDLERS and TRIAGE_RULES are then not read
   * again. Default: resolved here.
   */
  readonly resolvedHandlers?: readonly Handler[];
  /**
   * The window of FEEDBACK_API_RATE_LIMIT. Default: 60 000, the API's minute; benchmarks and
   * tests scale it down to keep their runs short.
   */
  readonly rateLimitWindowMs?: number;
  /**
   * How long past the window a slot is held. Default: a sixtieth of the window (1 s a minute);
   * a scaled-down window needs more than its sixtieth, since the time a request takes to reach
   * the API does not scale down with it.
   */
  readonly rateLimitMarginMs?: number;
}

/**
 * @throws {HandlerLoadError} when a handler module cannot be used, or no handler is enabled.
 * @throws {TriageRulesError} when the rules file is not valid.
 */
export async function resolveHandlers(
  config: WorkerConfig,
  extra: readonly Handler[] = [],
): Promise<Handler[]> {
  const handlers = [...extra, ...(await loadHandlerModules(config.handlerModules))];
  if (config.triage) {
    const rules = loadTriageRules(config.triage.rulesPath);
    const { dryRun, consoleUrl, readVariable } = config.triage;
    handlers.push(createTriageHandler({ rules, dryRun, consoleUrl, readVariable }));
  }
  assertUniqueNames(handlers);
  if (handlers.length === 0) {
    // Without a handler every delivery would be consumed and dropped; refuse instead.
    throw new HandlerLoadError(
      'no handlers: set TRIAGE_RULES to enable auto-triage, or HANDLERS to load your own',
    );
  }
  return handlers;
}

export async function startWorker(
  config: WorkerConfig,
  logger: Logger,
  options: StartWorkerOptions = {},
): Promise<StartedWorker> {
  const handlers = options.resolvedHandlers ?? (await resolveHandlers(config, options.handlers));
  const connection = createWorkerConnection(config.redisUrl, logger);
  // A REDIS_URL that is wrong or unreachable stops the process now, instead of a worker that
  // waits forever.
  await waitForRedis(connection, config.redisUrl).catch(async (error: unknown) => {
    await closeConnection(connection);
    throw error;
  });
  const metrics = createMetrics();
  // Probes first: an orchestrator asks /healthz during start-up too; /readyz says ready only once
  // the runtime runs, and no more once it stops.
  let running = false;
  const probes = await startProbeServer({
    port: config.metricsPort,
    // Redis answers, not only a connection that says it is ready: a Redis that went away a moment
    // ago is seen by a ping before the socket's close is. Bounded: this connection waits forever.
    isReady: async () =>
      running &&
      (await Promise.race([
        redisAnswers(connection),
        sleep(READY_WITHIN_MS, false, { ref: false }),
      ])),
    metrics,
  });
  logger.info({ url: probes.url }, 'worker probes listening (/healthz, /readyz, /metrics)');
  const api = createApiClient({
    baseUrl: config.api.baseUrl,
    token: config.api.token,
    timeoutMs: config.api.timeoutMs,
    rateLimiter: createRedisRateLimiter({
      connection,
      prefix: config.queuePrefix,
      limit: config.api.rateLimitPerMinute,
      ...(options.rateLimitWindowMs ? { windowMs: options.rateLimitWindowMs } : {}),
      ...(options.rateLimitMarginMs !== undefined ? { marginMs: options.rateLimitMarginMs } : {}),
    }),
    logger,
    observer: {
      answered: (method, status) => metrics.apiRequests.inc({ method, status: String(status) }),
      waitedForSlot: (ms) => metrics.rateLimitWaitSeconds.inc(ms / 1000),
    },
  });
  const runtime = await startWorkerRuntime({
    connection,
    prefix: config.queuePrefix,
    handlers,
    api,
    logger,
    concurrency: config.concurrency,
    dedupeTtlSeconds: config.dedupeTtlSeconds,
    historyMaxDeliveries: config.historyMaxDeliveries,
    ackReplicas: config.ackReplicas,
    lockDurationMs: config.lockSeconds * 1000,
    retention: handlerRunRetention(config.completedJobRetentionSeconds),
    deliveryRetention: deliveryRetention(config.completedJobRetentionSeconds),
    metrics,
    dryRun: config.triage?.dryRun === true,
    similar: config.similar,
  }).catch(async (error: unknown) => {
    await probes.close();
    await closeConnection(connection);
    throw error;
  });
  metrics.watchQueues(async () => [runtime.deliveries, ...(await runtime.runQueues.all())]);
  running = true;
  return {
    ...runtime,
    close: async () => {
      running = false;
      await runtime.close(config.shutdownTimeoutSeconds * 1000);
      await probes.close();
      await closeConnection(connection);
    },
  };
}
