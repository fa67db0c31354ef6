import { loadReceiverConfig } from '../config.js';
import { createLogger } from '../logger.js';
import { startReceiver } from '../receiver.js';
import { startTracing } from '../tracing/tracer.js';
import type { Command } from './command.js';
import { assertPortFree, assertPortsApart } from './port-free.js';
import { stopOnSignal } from './stop-on-signal.js';

export const serveCommand: Command = {
  name: 'serve',
  summary: 'run the HTTP receiver',
  help: `Usage: feedback-receiver serve

Runs the HTTP receiver: POST /webhooks/feedback, GET /healthz, GET /readyz.
Configured through environment variables (see the README); WEBHOOK_SECRET or
WEBHOOK_SECRET_FILE is required.`,
  async run() {
    const config = loadReceiverConfig();
    // Said with the variable's name before anything starts, where listen would say EADDRINUSE.
    await assertPortFree('PORT', config.port, { setting: 'HOST', address: config.host });
    if (config.metricsPort !== undefined) {
      assertPortsApart(
        { variable: 'PORT', port: config.port },
        { variable: 'METRICS_PORT', port: config.metricsPort },
      );
      await assertPortFree('METRICS_PORT', config.metricsPort, {
        setting: 'HOST',
        address: config.host,
      });
    }
    const logger = createLogger({
      level: config.logLevel,
      pretty: config.logPretty,
      traceIds: config.tracing !== undefined,
    });
    const running = stopOnSignal(logger, 'receiver');
    // Stopped last: the spans of the shutdown itself are sent too.
    running.add(await startTracing(config.tracing, logger));
    running.add((await startReceiver(config, logger)).close);
  },
};
