import { loadReceiverConfig } from '../config.js';
import { createLogger } from '../logger.js';
import { startReceiver } from '../receiver.js';
import { stopOnSignal } from './stop-on-signal.js';

export const serveHelp = `Usage: feedback-receiver serve

Runs the HTTP receiver: POST /webhooks/feedback, GET /healthz, GET /readyz.
Configured through environment variables (see the README); WEBHOOK_SECRET or
WEBHOOK_SECRET_FILE is required.`;

export async function serve(): Promise<void> {
  const config = loadReceiverConfig();
  const logger = createLogger({ level: config.logLevel });
  const receiver = await startReceiver(config, logger);
  stopOnSignal(receiver.close, logger, 'receiver');
}
