import { loadReceiverConfig } from '../config.js';
import { createLogger } from '../logger.js';
import { startReceiver } from '../receiver.js';
import type { Command } from './command.js';
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
    const logger = createLogger({ level: config.logLevel, pretty: config.logPretty });
    const running = stopOnSignal(logger, 'receiver');
    running.add((await startReceiver(config, logger)).close);
  },
};
