/**
 * Which runs the console offers to run again: the ones the API runs again (run-again.ts), that
 * is, completed runs whose job or routing record is kept, records of earlier versions included.
 */
import { describe, expect, it } from 'vitest';
import { deliveryPage, runAgainPage } from '../../../src/http/console/pages.js';
import type { DeliveryView, RunView } from '../../../src/worker/delivery-log.js';

const KEY = 'feedback.created:fb_r1';

function deliveryWith(runs: RunView[]): DeliveryView {
  return {
    key: KEY,
    receivedAt: '2026-11-23T12:00:00.000Z',
    queuedAt: '2026-11-23T12:00:00.001Z',
    record: { id: 'fb_r1', title: 'Runs of every kind' } as DeliveryView['record'],
    state: 'done',
    runs,
  };
}

const runs: RunView[] = [
  // Completed while routing, by a version that kept no attempt details.
  { handler: 'routed-earlier', state: 'completed', attempts: 1, history: [] },
  {
    handler: 'with-job',
    state: 'completed',
    runId: 'd-x.with-job',
    attempts: 2,
    history: [],
  },
  // Found done by an earlier routing of the same delivery: nothing kept says how.
  { handler: 'done-before', state: 'completed', history: [] },
  { handler: 'failed', state: 'failed', runId: 'd-x.failed', attempts: 3, history: [] },
];

const offered = (markup: string) =>
  [...markup.matchAll(/run-again\?handler=([\w-]+)/g)].map((match) => match[1]);

describe('the run-again offer', () => {
  it('is on the delivery page for the runs the API runs again, and only those', () => {
    expect(offered(deliveryPage(deliveryWith(runs)).markup)).toEqual([
      'routed-earlier',
      'with-job',
    ]);
  });

  it('names them on the question, and says so where there is none', () => {
    const asking = runAgainPage(deliveryWith(runs), undefined).markup;
    expect(asking).toContain('<strong>routed-earlier</strong>');
    expect(asking).toContain('<strong>with-job</strong>');
    expect(asking).not.toContain('<strong>done-before</strong>');
    expect(runAgainPage(deliveryWith(runs), 'done-before').markup).toContain('No completed run');
  });
});
