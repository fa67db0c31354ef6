import { loadReceiverConfig } from '../config.js';
import { createLogger } from '../logger.js';
import { startReceiver } from '../receiver.js';

export const serveHelp = `Usage: feedback-receiver serve

Runs the HTTP receiver: POST /webhooks/feedback, GET /healthz, GET /readyz.
Configured through environment variables (see the README); WEBHOOK_SECRET or
WEBHOOK_SECRET_FILE is required.`;

export async function serve(): Promise<void> {
  const config = loadReceiverConfig();
  const logger = createLogger({ level: config.logLevel });
  const receiver = await startReceiver(config, logger);

  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) {
      logger.warn({ signal }, 'second signal: exiting now');
      process.exit(1);
    }
    stopping = true;
    logger.info({ signal }, 'shutting down: finishing in-flight requests');
    receiver.close().then(
      () => {
        logger.info('receiver stopped');
        process.exit(0);
      },
      (error: unknown) => {
        logger.error({ err: String(error) }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}
