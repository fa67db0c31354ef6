/**
 * Which runs the console offers to run again: the ones the reader says can run again
 * (run-reader.ts), which are the ones the API runs again.
 */
import { describe, expect, it } from 'vitest';
import { deliveryPage, runAgainPage } from '../../../src/http/console/pages.js';
import type { DeliveryView } from '../../../src/runs/delivery-log.js';
import type { RunView } from '../../../src/runs/run-reader.js';

const KEY = 'feedback.created:fb_r1';

function deliveryWith(runs: RunView[]): DeliveryView {
  return {
    key: KEY,
    receivedAt: '2026-11-23T12:00:00.000Z',
    queuedAt: '2026-11-23T12:00:00.001Z',
    record: { id: 'fb_r1', title: 'Runs of every kind' } as DeliveryView['record'],
    recordKept: true,
    state: 'done',
    runs,
  };
}

const run = (handler: string, state: RunView['state'], canRunAgain: boolean): RunView => ({
  handler,
  runId: `d-x.${handler}`,
  state,
  history: [],
  canRetry: state === 'failed',
  canRunAgain,
});

const runs: RunView[] = [
  run('completed', 'completed', true),
  run('also-completed', 'completed', true),
  // Its job is no longer kept: nothing to run again.
  run('not-kept', 'unknown', false),
  run('failed', 'failed', false),
];

const offered = (markup: string) =>
  [...markup.matchAll(/run-again\?handler=([\w-]+)/g)].map((match) => match[1]);

describe('the run-again offer', () => {
  it('is on the delivery page for the runs the API runs again, and only those', () => {
    expect(offered(deliveryPage(deliveryWith(runs)).markup)).toEqual([
      'completed',
      'also-completed',
    ]);
  });

  it('names them on the question, and says so where there is none', () => {
    const asking = runAgainPage(deliveryWith(runs), undefined).markup;
    expect(asking).toContain('<strong>completed</strong>');
    expect(asking).toContain('<strong>also-completed</strong>');
    expect(asking).not.toContain('<strong>not-kept</strong>');
    expect(runAgainPage(deliveryWith(runs), 'not-kept').markup).toContain('No completed run');
  });
});
