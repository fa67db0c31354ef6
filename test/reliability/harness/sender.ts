/**
 * A sender that behaves like the real service: it signs each delivery, posts it, and retries any
 * answer other than a 2xx (and any failed connection) with backoff until it gets one. It keeps
 * what happened, for the invariant and the report.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { signHmacSha256 } from '../../../src/webhooks/hmac-sha256.js';

export interface SenderOptions {
  /** The receivers' webhook URLs; attempts go round them. */
  readonly targets: () => readonly string[];
  readonly secret: string;
  /** How long one delivery is retried before the scenario fails. Default: 90 s. */
  readonly deadlineMs?: number;
}

export interface Sender {
  /** Delivery keys posted at least once. */
  readonly sent: Set<string>;
  /** Delivery keys that got a 2xx. */
  readonly acknowledged: Set<string>;
  /** How often each status was answered; 0 counts failed connections. */
  readonly statuses: Map<number, number>;
  /** Every answer's headers and body, for the leak check. */
  readonly answers: string[];
  /** Every attempt in order: when its answer came (0 for a failed connection), how long it took, and its `code`. */
  readonly timeline: { at: number; status: number; ms: number; code?: string }[];
  /** Posts one record until a 2xx; returns that status. */
  deliver(record: { id: string } & Record<string, unknown>): Promise<number>;
  /** Delivers `count` records `fb_<prefix>_<n>`, `concurrency` at a time. */
  stream(count: number, options: { prefix: string; concurrency: number }): Promise<void>;
  count(status: number): number;
}

export function keyOf(id: string): string {
  return `feedback.created:${id}`;
}

export function createSender({ targets, secret, deadlineMs = 90_000 }: SenderOptions): Sender {
  const sent = new Set<string>();
  const acknowledged = new Set<string>();
  const statuses = new Map<number, number>();
  const answers: string[] = [];
  const timeline: Sender['timeline'] = [];
  let attempt = 0;

  async function post(url: string, body: string): Promise<number> {
    const start = Date.now();
    try {
      const response = await fetch(url, {
        method: 'POST',
        headers: {
          'Content-Type': 'application/json',
          'X-Ybug-Signature': signHmacSha256(body, secret),
        },
        body,
        signal: AbortSignal.timeout(10_000),
      });
      const text = await response.text();
      answers.push(`${JSON.stringify([...response.headers])} ${text}`);
      const code = /"code":"([A-Z_]+)"/.exec(text)?.[1];
      const at = Date.now();
      timeline.push({ at, status: response.status, ms: at - start, ...(code ? { code } : {}) });
      return response.status;
    } catch {
      timeline.push({ at: Date.now(), status: 0, ms: Date.now() - start });
      return 0;
    }
  }

  async function deliver(record: { id: string } & Record<string, unknown>): Promise<number> {
    const key = keyOf(record.id);
    const body = JSON.stringify(record);
    const deadline = Date.now() + deadlineMs;
    sent.add(key);
    for (let delayMs = 50; ; delayMs = Math.min(delayMs * 2, 1_000)) {
      const urls = targets();
      const status = await post(urls[(attempt += 1) % urls.length]!, body);
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
      if (status >= 200 && status < 300) {
        acknowledged.add(key);
        return status;
      }
      if (Date.now() > deadline) throw new Error(`${key} got no 2xx within ${deadlineMs} ms`);
      await sleep(delayMs); // the sender's own backoff, as the real service retries
    }
  }

  async function stream(
    count: number,
    { prefix, concurrency }: { prefix: string; concurrency: number },
  ) {
    let next = 0;
    const lane = async () => {
      while (next < count) {
        const id = `fb_${prefix}_${(next += 1)}`;
        await deliver({ id, title: `Delivery ${id}`, rating: next % 5 });
      }
    };
    await Promise.all(Array.from({ length: concurrency }, lane));
  }

  return {
    sent,
    acknowledged,
    statuses,
    answers,
    timeline,
    deliver,
    stream,
    count: (status) => statuses.get(status) ?? 0,
  };
}
