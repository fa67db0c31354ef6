/**
 * Delivers `feedback.created` to a project's hooks the way the service does: the bare record as
 * JSON, signed `X-Ybug-Signature: sha256=<hex HMAC of the body>` with the hook's secret, and
 * retried with backoff while the answer is not a 2xx.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '../logger.js';
import type { FeedbackRecord } from '../webhooks/feedback-record.js';
import { signHmacSha256 } from '../webhooks/hmac-sha256.js';
import type { SandboxHook } from './state.js';

export interface DeliveryAttempt {
  readonly hookId: string;
  readonly recordId: string;
  readonly attempt: number;
  /** The answer's status, or undefined when the receiver could not be reached. */
  readonly status: number | undefined;
  readonly at: string;
}

export interface DelivererOptions {
  readonly logger: Logger;
  /** Attempts per delivery. Default: 8. */
  readonly attempts?: number;
  /** The first retry's delay, doubled each time. Default: 1 000. */
  readonly backoffMs?: number;
}

export interface Deliverer {
  /** Every attempt so far, oldest first. */
  readonly attempts: DeliveryAttempt[];
  deliver(hook: SandboxHook, record: FeedbackRecord): Promise<void>;
  /** Waits for deliveries in progress (their retries included). */
  idle(): Promise<void>;
  /** Stops retrying. */
  stop(): void;
}

export function createDeliverer({
  logger,
  attempts = 8,
  backoffMs = 1_000,
}: DelivererOptions): Deliverer {
  const log: DeliveryAttempt[] = [];
  const inFlight = new Set<Promise<void>>();
  const stopped = new AbortController();

  async function run(hook: SandboxHook, record: FeedbackRecord) {
    const body = JSON.stringify(record);
    const headers: Record<string, string> = {
      'Content-Type': 'application/json',
      'User-Agent': 'feedback-receiver-sandbox',
    };
    if (hook.secret !== undefined) headers['X-Ybug-Signature'] = signHmacSha256(body, hook.secret);
    for (let attempt = 1; attempt <= attempts && !stopped.signal.aborted; attempt += 1) {
      let status: number | undefined;
      try {
        const response = await fetch(hook.targetUrl, {
          method: 'POST',
          headers,
          body,
          signal: AbortSignal.any([stopped.signal, AbortSignal.timeout(10_000)]),
        });
        status = response.status;
        await response.arrayBuffer();
      } catch {
        status = undefined;
      }
      log.push({
        hookId: hook.id,
        recordId: record.id,
        attempt,
        status,
        at: new Date().toISOString(),
      });
      const fields = { hook: hook.id, record: record.id, attempt, status };
      if (status !== undefined && status >= 200 && status < 300) {
        logger.info(fields, 'sandbox delivered');
        return;
      }
      logger.warn(fields, 'sandbox delivery not accepted; retrying');
      await sleep(backoffMs * 2 ** (attempt - 1), undefined, { signal: stopped.signal }).catch(
        () => {},
      );
    }
  }

  return {
    attempts: log,
    deliver(hook, record) {
      const delivery = run(hook, record).finally(() => inFlight.delete(delivery));
      inFlight.add(delivery);
      return delivery;
    },
    idle: async () => {
      await Promise.all(inFlight);
    },
    stop: () => stopped.abort(),
  };
}
