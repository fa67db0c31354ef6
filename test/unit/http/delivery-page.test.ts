/**
 * A delivery's page: the timeline in the order one thing made the next, whatever the clocks
 * stamped, and auto-triage's summary in sentences that say what happened (issue 29, items 4, 5).
 */
import { describe, expect, it } from 'vitest';
import { deliveryPage } from '../../../src/http/console/pages.js';
import type { DeliveryView } from '../../../src/runs/delivery-log.js';
import type { RunView } from '../../../src/runs/run-reader.js';
import type { AttemptRecord } from '../../../src/runs/run-queues.js';

function deliveryWith(runs: RunView[], routedAt = '2026-11-23T12:00:00.010Z'): DeliveryView {
  return {
    key: 'feedback.created:fb_t1',
    receivedAt: '2026-11-23T12:00:00.000Z',
    queuedAt: '2026-11-23T12:00:00.001Z',
    takenAt: '2026-11-23T12:00:00.002Z',
    routedAt,
    record: { id: 'fb_t1', title: 'Timeline' } as DeliveryView['record'],
    recordKept: true,
    state: 'done',
    runs,
  };
}

const attempt = (startedAt: string, n = 1, outcome: AttemptRecord['outcome'] = 'completed') =>
  ({ attempt: n, of: 3, startedAt, ms: 4, outcome }) satisfies AttemptRecord;

const run = (handler: string, history: AttemptRecord[], result?: unknown): RunView => ({
  handler,
  runId: `d-x.${handler}`,
  state: 'completed',
  history,
  canRetry: false,
  canRunAgain: true,
  ...(result === undefined ? {} : { result }),
});

/** The timeline's lines as a reader sees them, without their times. */
function timelineOf(delivery: DeliveryView): string[] {
  const markup = deliveryPage(delivery).markup;
  const list = /<ol class="timeline">([\s\S]*?)<\/ol>/.exec(markup)?.[1] ?? '';
  return [...list.matchAll(/<li>([\s\S]*?)<\/li>/g)].map(([, item]) =>
    item!
      .replace(/<time[^>]*>[^<]*<\/time>/, '')
      .replace(/<[^>]+>/g, '')
      .replace(/\s+/g, ' ')
      .trim(),
  );
}

/** The triage summary as a reader sees it. */
function triageOf(result: unknown): string {
  const markup = deliveryPage(
    deliveryWith([run('auto-triage', [attempt('2026-11-23T12:00:00.020Z')], result)]),
  ).markup;
  const item = /<li class="run-completed">([\s\S]*?)<\/li>/.exec(markup)?.[1] ?? '';
  return item
    .replace(/<[^>]+>/g, '')
    .replace(/&quot;/g, '"')
    .replace(/\s+/g, ' ')
    .trim();
}

describe('the timeline', () => {
  it('lists the routing before the runs it made, though stamped 1 ms after a run started', () => {
    const delivery = deliveryWith(
      [run('notify-team', [attempt('2026-11-23T12:00:00.009Z')])],
      '2026-11-23T12:00:00.010Z',
    );
    expect(timelineOf(delivery)).toEqual([
      'received',
      'queued',
      'taken by a worker',
      'routed to notify-team',
      'notify-team: attempt 1 of 3, completed after 4 ms',
    ]);
  });

  it('puts the runs in the order of their stamps, and runs stamped alike by handler name', () => {
    const at = '2026-11-23T12:00:00.020Z';
    const delivery = deliveryWith([
      run('zeta', [attempt(at)]),
      run('alpha', [attempt(at)]),
      run('early', [attempt('2026-11-23T12:00:00.015Z')]),
    ]);
    expect(timelineOf(delivery).slice(4)).toEqual([
      'early: attempt 1 of 3, completed after 4 ms',
      'alpha: attempt 1 of 3, completed after 4 ms',
      'zeta: attempt 1 of 3, completed after 4 ms',
    ]);
  });

  it("keeps a run's attempts in the order they were made, whatever another worker's clock said", () => {
    const delivery = deliveryWith([
      run('notify-team', [
        attempt('2026-11-23T12:00:00.030Z', 1, 'retrying'),
        // Taken by a worker whose clock is behind.
        attempt('2026-11-23T12:00:00.025Z', 2, 'completed'),
      ]),
    ]);
    expect(timelineOf(delivery).slice(4)).toEqual([
      'notify-team: attempt 1 of 3, failed; retried after a backoff after 4 ms',
      'notify-team: attempt 2 of 3, completed after 4 ms',
    ]);
  });
});

describe('the triage summary', () => {
  it('says that nothing was sent when no rule fired, in no dry-run words', () => {
    const summary = triageOf({ matched: [], patch: {}, sent: false });
    expect(summary).toContain('No rule fired; nothing was sent.');
    expect(summary).not.toContain('Would send');
    expect(summary).not.toContain('PATCH');
  });

  it('says what was sent and what the API answered, each sentence with its full stop', () => {
    expect(
      triageOf({
        matched: ['unhappy-customers', 'bugs'],
        patch: { priority_id: 4 },
        sent: true,
        answer: { priority_id: 4 },
      }),
    ).toContain(
      'Rules that fired: unhappy-customers, bugs. Sent PATCH {"priority_id":4}. The API answered with {"priority_id":4}.',
    );
  });

  it('says what it would send in dry run', () => {
    expect(
      triageOf({ matched: ['unhappy-customers'], patch: { priority_id: 4 }, sent: false }),
    ).toContain(
      'Rules that fired: unhappy-customers. Would send PATCH {"priority_id":4} (dry run: nothing was sent).',
    );
  });

  it('says that nothing was sent when the record already had what the rules set', () => {
    const summary = triageOf({ matched: ['unhappy-customers'], patch: {}, sent: false });
    expect(summary).toContain(
      'Rules that fired: unhappy-customers. The record already had what they set; nothing was sent.',
    );
    expect(summary).not.toContain('Would send');
  });

  it("says what rules on the group did: the first record's PATCH and the notifies", () => {
    expect(
      triageOf({
        matched: ['incident'],
        patch: {},
        sent: false,
        first: { recordId: 'fb_1', patch: { priority_id: 1 } },
        firstSent: true,
        notify: [{ rule: 'incident', urlFrom: 'SLACK_WEBHOOK_URL' }],
        notified: ['SLACK_WEBHOOK_URL'],
      }),
    ).toContain(
      'Rules that fired: incident. Sent PATCH {"priority_id":1} to the group\'s first record fb_1 and a notify through SLACK_WEBHOOK_URL.',
    );
  });

  it('says what rules on the group would do in dry run', () => {
    const summary = triageOf({
      matched: ['incident'],
      patch: { status_id: 9 },
      sent: false,
      first: { recordId: 'fb_1', patch: { priority_id: 1 } },
      notify: [{ rule: 'incident', urlFrom: 'SLACK_WEBHOOK_URL' }],
    });
    expect(summary).toContain(
      'Would send PATCH {"priority_id":1} to the group\'s first record fb_1 and a notify through SLACK_WEBHOOK_URL (dry run: not sent).',
    );
    expect(summary).not.toContain('Sent');
  });
});
