import type { Logger } from '../logger.js';

export interface Stoppable {
  /** Adds something to stop; on a signal, the last added stops first. */
  add(stop: () => Promise<void>): void;
  /**
   * Stops what has started so far, the last added first: for a start that failed half way, so
   * nothing it started (a redis-server above all) outlives the process.
   */
  stopStarted(): Promise<void>;
  /**
   * Stops everything as a signal would, then exits 1: for a part that failed for good while
   * running (start's own redis-server died), so that whatever supervises the process restarts it.
   */
  fail(fields: object, message: string): void;
}

/**
 * The signals that stop a command cleanly. SIGHUP too: the terminal it runs in was closed (or the
 * SSH session dropped), and Node's default for it ends the process at once, without a shutdown,
 * leaving `start`'s own redis-server (in its own process group) running with nobody to stop it.
 */
export const STOP_SIGNALS = ['SIGTERM', 'SIGINT', 'SIGHUP'] as const satisfies NodeJS.Signals[];

/**
 * Installs STOP_SIGNALS handling before anything starts, so a signal that arrives during
 * start-up still stops cleanly whatever has started so far, and exits 0 (1 if stopping failed).
 * A second signal exits at once, for the person at the terminal who does not want to wait.
 */
export function stopOnSignal(logger: Logger, what: string): Stoppable {
  const stops: (() => Promise<void>)[] = [];
  let stopping = false;
  const stopAll = async () => {
    for (const stop of stops.splice(0).reverse()) await stop();
  };
  const shutDown = (exitCode: number) =>
    stopAll().then(
      () => {
        logger.info(`${what} stopped`);
        process.exit(exitCode);
      },
      (error: unknown) => {
        logger.error({ error: String(error) }, 'shutdown failed');
        process.exit(1);
      },
    );
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) {
      logger.warn({ signal }, 'second signal: exiting now');
      process.exit(1);
    }
    stopping = true;
    logger.info({ signal }, `shutting down the ${what}`);
    void shutDown(0);
  };
  for (const signal of STOP_SIGNALS) process.on(signal, onSignal);
  return {
    add: (stop) => void stops.push(stop),
    stopStarted: async () => {
      // Each is tried: one that fails must not leave the ones before it running.
      for (const stop of stops.splice(0).reverse()) {
        await stop().catch((error: unknown) =>
          logger.error({ error: String(error) }, 'stopping after a failed start failed'),
        );
      }
    },
    fail: (fields, message) => {
      if (stopping) return;
      stopping = true;
      logger.error(fields, `${message}: shutting down the ${what}`);
      void shutDown(1);
    },
  };
}
