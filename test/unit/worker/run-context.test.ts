import { describe, expect, it } from 'vitest';
import { createApiClient } from '../../../src/api/client.js';
import { createLogger } from '../../../src/logger.js';
import type { Delivery } from '../../../src/webhooks/delivery.js';
import { RunContext } from '../../../src/worker/run-context.js';

const delivery: Delivery = {
  key: 'feedback.created:fb_1',
  event: 'feedback.created',
  receivedAt: '2026-11-23T00:00:00.000Z',
  record: { id: 'fb_1' },
};
const bindings = { deliveryKey: delivery.key, handler: 'look', attempt: 2 };

function newRun() {
  const lines: Record<string, unknown>[] = [];
  const logger = createLogger({
    level: 'info',
    destination: { write: (line: string) => void lines.push(JSON.parse(line)) },
  });
  const api = createApiClient({ baseUrl: undefined, token: undefined });
  return { run: new RunContext(delivery, bindings, { api, logger }), lines };
}

describe('a run context', () => {
  it('gives the record, the delivery and the attempt', () => {
    const { run } = newRun();
    const { record, delivery: info, attempt } = run;
    expect({ record, info, attempt }).toEqual({
      record: { id: 'fb_1' },
      info: { key: delivery.key, event: 'feedback.created', receivedAt: delivery.receivedAt },
      attempt: 2,
    });
  });

  it('logs with the delivery key, the handler and the attempt on every line', () => {
    const { run, lines } = newRun();
    run.logger.info('hello');
    expect(lines[0]).toMatchObject({ ...bindings, msg: 'hello' });
    expect(run.logger).toBe(run.logger);
  });

  it('fires a signal read before the worker aborts the run', () => {
    const { run } = newRun();
    const signal = run.signal;
    expect(RunContext.abortedFor(run)).toBeUndefined();
    const shutdown = new Error('worker shutting down');
    RunContext.abort(run, shutdown);
    expect(signal.aborted).toBe(true);
    expect(RunContext.abortedFor(run)).toBe(shutdown);
  });

  it('keeps the first reason it was aborted for', () => {
    const { run } = newRun();
    const timeout = new DOMException('handler "look" timed out after 5 ms', 'TimeoutError');
    RunContext.abort(run, timeout);
    RunContext.abort(run, new Error('worker shutting down'));
    expect(RunContext.abortedFor(run)).toBe(timeout);
    expect(run.signal.reason).toBe(timeout);
  });

  it('gives a signal already fired when first read after the abort', () => {
    const { run } = newRun();
    RunContext.abort(run, new Error('worker shutting down'));
    expect(run.signal.aborted).toBe(true);
    expect((run.signal.reason as Error).message).toBe('worker shutting down');
  });
});
