import { describe, expect, it } from 'vitest';
import type { Delivery } from '../../../src/webhooks/delivery.js';
import { defineHandler } from '../../../src/worker/handler.js';
import { route } from '../../../src/worker/routing.js';

const delivery = (record: Delivery['record']): Delivery => ({
  key: `feedback.created:${record.id}`,
  event: 'feedback.created',
  receivedAt: '2026-11-22T10:00:00.000Z',
  record,
});
const handle = () => undefined;

describe('route', () => {
  const everything = defineHandler({ name: 'everything', handle });
  const lowRatings = defineHandler({
    name: 'low-ratings',
    where: (record) => (record.rating ?? 5) <= 2,
    handle,
  });
  const otherEvent = defineHandler({ name: 'other-event', events: ['feedback.deleted'], handle });

  it('sends a delivery to the handlers of its event whose where holds', () => {
    const names = (record: Delivery['record']) =>
      route([everything, lowRatings, otherEvent], delivery(record)).map((r) => r.handler.name);
    expect(names({ id: 'a', rating: 1 })).toEqual(['everything', 'low-ratings']);
    expect(names({ id: 'b', rating: 5 })).toEqual(['everything']);
  });

  it('keeps a handler whose where threw, with the reason, so the run fails visibly', () => {
    const broken = defineHandler({
      name: 'broken',
      where: () => {
        throw new Error('boom');
      },
      handle,
    });
    expect(route([broken], delivery({ id: 'a' }))).toEqual([
      { handler: broken, whereError: 'boom' },
    ]);
  });
});
