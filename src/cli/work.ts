import { loadWorkerConfig } from '../config.js';
import { createLogger } from '../logger.js';
import { startWorker } from '../worker-process.js';
import { startTracing } from '../tracing/tracer.js';
import type { Command } from './command.js';
import { assertPortFree } from './port-free.js';
import { stopOnSignal } from './stop-on-signal.js';

export const workCommand: Command = {
  name: 'work',
  summary: 'run a worker that hands deliveries to the handlers',
  help: `Usage: feedback-receiver work

Runs a worker: takes deliveries from the queue and runs every matching handler.
Handlers: auto-triage when TRIAGE_RULES names a rules file, and your own modules
listed in HANDLERS (comma-separated paths). Run as many workers as you like;
they share the API's rate limit (FEEDBACK_API_RATE_LIMIT) through Redis.`,
  async run() {
    const config = loadWorkerConfig();
    // Said with the variable's name before anything starts (a second worker on this machine).
    await assertPortFree('METRICS_PORT', config.metricsPort);
    const logger = createLogger({
      level: config.logLevel,
      pretty: config.logPretty,
      traceIds: config.tracing !== undefined,
    });
    const running = stopOnSignal(logger, 'worker');
    // Stopped last: the spans of the shutdown itself are sent too.
    running.add(await startTracing(config.tracing, logger));
    running.add((await startWorker(config, logger)).close);
  },
};
