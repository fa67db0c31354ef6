import { resolve } from 'node:path';
import { loadReceiverConfig, loadWorkerConfig } from '../config.js';
import { createLogger } from '../logger.js';
import { startReceiver } from '../receiver.js';
import { resolveHandlers, startWorker } from '../worker-process.js';
import { startTracing } from '../tracing/tracer.js';
import type { Command } from './command.js';
import { startEmbeddedRedis } from './embedded-redis.js';
import { assertPortFree, assertPortsApart } from './port-free.js';
import { stopOnSignal } from './stop-on-signal.js';

/** Where `start` keeps its own Redis's data when REDIS_URL is not set. */
export const EMBEDDED_REDIS_DIR = '.feedback-receiver/redis';

export const startCommand: Command = {
  name: 'start',
  summary: 'run the receiver and a worker in one process (small deployments)',
  help: `Usage: feedback-receiver start

Runs the receiver and a worker in one process, for small deployments.
With REDIS_URL unset it starts its own redis-server (it must be on the PATH),
keeping data in ${EMBEDDED_REDIS_DIR} with the append-only file on, so a
restart keeps the queue. With REDIS_URL set it uses that Redis.`,
  async run() {
    const receiverConfig = loadReceiverConfig();
    const workerConfig = loadWorkerConfig();
    // What can be wrong with the settings (the handlers, the rules file, a port in use) is found
    // before anything starts, so a failed start leaves nothing behind to stop.
    const handlers = await resolveHandlers(workerConfig);
    assertPortsApart(
      { variable: 'PORT', port: receiverConfig.port },
      { variable: 'METRICS_PORT', port: workerConfig.metricsPort },
    );
    await assertPortFree('PORT', receiverConfig.port, {
      setting: 'HOST',
      address: receiverConfig.host,
    });
    await assertPortFree('METRICS_PORT', workerConfig.metricsPort);
    const logger = createLogger({
      level: receiverConfig.logLevel,
      pretty: receiverConfig.logPretty,
      traceIds: receiverConfig.tracing !== undefined,
    });
    // Stopped in reverse order: the receiver first (no new deliveries), the worker, then Redis,
    // then tracing (the shutdown's spans are sent too). One process, one service name: the
    // receiver's.
    const running = stopOnSignal(logger, 'receiver and worker');
    try {
      running.add(await startTracing(receiverConfig.tracing, logger));
      let redisUrl = receiverConfig.redisUrl;
      if (!receiverConfig.redisUrlFromEnv) {
        const dir = resolve(EMBEDDED_REDIS_DIR);
        const redis = await startEmbeddedRedis({ dir, appendOnly: true });
        running.add(redis.stop);
        // Nothing would start it again: the receiver would answer 503 and the worker wait, for
        // good. Stopped, the process lets its supervisor restart it, with the data on disk.
        redis.onUnaskedExit((code, signal) =>
          running.fail({ code, signal }, 'the private redis-server exited'),
        );
        logger.info(
          { redisUrl: redis.url, dir },
          'REDIS_URL not set: started a private redis-server',
        );
        redisUrl = redis.url;
      }
      const worker = await startWorker({ ...workerConfig, redisUrl }, logger, {
        resolvedHandlers: handlers,
      });
      running.add(worker.close);
      // METRICS_PORT is the worker's here; the receiver's /metrics stays behind ADMIN_TOKEN.
      const receiver = await startReceiver(
        { ...receiverConfig, redisUrl, metricsPort: undefined },
        logger,
      );
      running.add(receiver.close);
    } catch (error) {
      // A port taken between the check and the listen, or a Redis that fails: what did start
      // (its own redis-server above all) is stopped before the error is reported.
      await running.stopStarted();
      throw error;
    }
  },
};
