import type { Logger } from '../logger.js';

export interface Stoppable {
  /** Adds something to stop; on a signal, the last added stops first. */
  add(stop: () => Promise<void>): void;
}

/**
 * Installs SIGTERM and SIGINT handling before anything starts, so a signal that arrives during
 * start-up still stops cleanly whatever has started so far, and exits 0 (1 if stopping failed).
 * A second signal exits at once, for the person at the terminal who does not want to wait.
 */
export function stopOnSignal(logger: Logger, what: string): Stoppable {
  const stops: (() => Promise<void>)[] = [];
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) {
      logger.warn({ signal }, 'second signal: exiting now');
      process.exit(1);
    }
    stopping = true;
    logger.info({ signal }, `shutting down the ${what}`);
    (async () => {
      for (const stop of stops.reverse()) await stop();
    })().then(
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
  return { add: (stop) => void stops.push(stop) };
}
