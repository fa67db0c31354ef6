import type { Logger } from '../logger.js';

/**
 * On SIGTERM or SIGINT, runs `stop` and exits 0 (1 if stopping failed). A second signal exits at
 * once, for the person at the terminal who does not want to wait.
 */
export function stopOnSignal(stop: () => Promise<void>, logger: Logger, what: string): void {
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) {
      logger.warn({ signal }, 'second signal: exiting now');
      process.exit(1);
    }
    stopping = true;
    logger.info({ signal }, `shutting down the ${what}`);
    stop().then(
      () => {
        logger.info(`${what} stopped`);
        process.exit(0);
      },
      (error: unknown) => {
        logger.error({ error: String(error) }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
}
