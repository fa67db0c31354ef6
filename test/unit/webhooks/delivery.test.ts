import { describe, expect, it } from 'vitest';
import {
  deduplicationIdFor,
  interpretPayload,
  readDelivery,
} from '../../../src/webhooks/delivery.js';

const receivedAt = new Date('2026-11-22T10:00:00.000Z');
const bytes = (value: unknown) => Buffer.from(JSON.stringify(value));

describe('interpretPayload', () => {
  it('keeps how the receiver accepted it, when told', () => {
    const receipt = { scheme: 'hmac-sha256', secretIndex: 1 };
    const outcome = interpretPayload(bytes({ id: 'fb_r' }), { receivedAt, receipt });
    expect(outcome).toMatchObject({ kind: 'delivery', delivery: { receipt } });
    expect(readDelivery((outcome as { delivery: unknown }).delivery)).toMatchObject({
      ok: true,
      delivery: { receipt },
    });
  });

  it('reads a bare record as a feedback.created keyed by event and record id', () => {
    const outcome = interpretPayload(bytes({ id: 'fb_1', title: 'Hi' }), { receivedAt });
    expect(outcome).toEqual({
      kind: 'delivery',
      delivery: {
        key: 'feedback.created:fb_1',
        event: 'feedback.created',
        receivedAt: '2026-11-22T10:00:00.000Z',
        record: { id: 'fb_1', title: 'Hi' },
      },
    });
  });

  it('reads an envelope with event and data', () => {
    const outcome = interpretPayload(
      bytes({ event: 'feedback.created', data: { id: 'fb_2' }, sent_at: 'now' }),
      { receivedAt },
    );
    expect(outcome.kind === 'delivery' && outcome.delivery.record).toEqual({ id: 'fb_2' });
  });

  it("keys a delivery by the sender's id where the scheme has one", () => {
    const outcome = interpretPayload(bytes({ id: 'fb_3' }), { receivedAt, deliveryId: 'msg_9' });
    expect(outcome.kind === 'delivery' && outcome.delivery.key).toBe('msg_9');
  });

  it('ignores other events without validating them', () => {
    expect(
      interpretPayload(bytes({ event: 'feedback.deleted', data: 42 }), { receivedAt }),
    ).toEqual({ kind: 'ignored', event: 'feedback.deleted' });
  });

  it('calls a body that is not JSON unparseable', () => {
    const outcome = interpretPayload(Buffer.from('{"id": '), { receivedAt });
    expect(outcome).toMatchObject({ kind: 'invalid', reason: 'unparseable' });
  });

  it('calls invalid UTF-8 unparseable instead of guessing at the characters', () => {
    const outcome = interpretPayload(Buffer.from([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d]), {
      receivedAt,
    });
    expect(outcome).toMatchObject({ kind: 'invalid', reason: 'unparseable' });
  });

  it('lists where a record breaks the schema', () => {
    const outcome = interpretPayload(bytes({ id: 7, rating: 'five' }), { receivedAt });
    expect(outcome).toMatchObject({
      kind: 'invalid',
      reason: 'schema',
      issues: [
        { path: 'id', message: expect.stringMatching(/string/) },
        { path: 'rating', message: expect.stringMatching(/number/) },
      ],
    });
  });

  it('keeps the first 20 issues of a record with thousands, and says how many more', () => {
    const tags = Array.from({ length: 5_000 }, (_, n) => n);
    const outcome = interpretPayload(bytes({ id: 'fb_tags', tags }), { receivedAt });
    expect(outcome.kind === 'invalid' && outcome.issues).toHaveLength(21);
    expect(outcome.kind === 'invalid' && outcome.issues.at(-1)).toEqual({
      path: '',
      message: 'and 4980 more issues',
    });
  });

  it('calls a body nested past 32 levels invalid, however it nests', () => {
    const deep = `{"id":"fb_deep","extra":${'['.repeat(100_000)}${']'.repeat(100_000)}}`;
    expect(interpretPayload(Buffer.from(deep), { receivedAt })).toMatchObject({
      kind: 'invalid',
      reason: 'schema',
      issues: [{ path: '', message: 'nested deeper than 32 levels' }],
    });
    const nested = (depth: number): unknown => (depth === 1 ? {} : { a: nested(depth - 1) });
    expect(interpretPayload(bytes({ id: 'fb_32', extra: nested(31) }), { receivedAt }).kind).toBe(
      'delivery',
    );
    expect(interpretPayload(bytes({ id: 'fb_33', extra: nested(32) }), { receivedAt }).kind).toBe(
      'invalid',
    );
    const arrays = (depth: number) =>
      `{"id":"fb_a${depth}","extra":${'['.repeat(depth)}${']'.repeat(depth)}}`;
    expect(interpretPayload(Buffer.from(arrays(31)), { receivedAt }).kind).toBe('delivery');
    expect(interpretPayload(Buffer.from(arrays(32)), { receivedAt }).kind).toBe('invalid');
  });

  it.each([null, [], 'text', 12])('calls the JSON value %j invalid', (value) => {
    expect(interpretPayload(bytes(value), { receivedAt }).kind).toBe('invalid');
  });
});

describe('deduplicationIdFor', () => {
  it('makes ids BullMQ accepts: no colon, never all digits', () => {
    for (const key of ['feedback.created:12', '12345', 'msg_p5jXN8AQ', 'a:b:c', '0']) {
      const jobId = deduplicationIdFor(key);
      expect(jobId).not.toContain(':');
      expect(jobId).not.toMatch(/^\d+$/);
    }
  });

  it('keeps a short key readable', () => {
    expect(deduplicationIdFor('feedback.created:fb_1')).toBe('d-feedback.created%3Afb_1');
  });

  it('hashes a long key to a bounded id', () => {
    const jobId = deduplicationIdFor('x'.repeat(1000));
    expect(jobId).toMatch(/^h-[0-9a-f]{64}$/);
  });

  it('gives different keys different ids', () => {
    const keys = ['a:b', 'a%3Ab', 'a b', 'a+b', 'x'.repeat(201), 'x'.repeat(202)];
    expect(new Set(keys.map(deduplicationIdFor)).size).toBe(keys.length);
  });
});

describe('readDelivery', () => {
  const delivery = {
    key: 'feedback.created:fb_1',
    event: 'feedback.created',
    receivedAt: '2026-11-23T10:00:00.000Z',
    record: { id: 'fb_1', rating: 'not checked here' },
  };

  it('takes a delivery as the queue holds it, and passes its record on as it is', () => {
    const check = readDelivery(delivery);
    expect(check).toEqual({ ok: true, delivery });
    expect(check.ok && check.delivery.record).toBe(delivery.record);
  });

  it("takes another event's delivery, as a later release's receiver may queue one", () => {
    const updated = { ...delivery, event: 'feedback.updated' };
    expect(readDelivery(updated)).toEqual({ ok: true, delivery: updated });
  });

  it.each([
    ['nothing', {}, ['key', 'event', 'receivedAt', 'record']],
    ['a key alone', { key: 'k1' }, ['event', 'receivedAt', 'record']],
    ['a null record', { ...delivery, record: null }, ['record']],
    ['a record without an id', { ...delivery, record: { title: 'x' } }, ['record']],
    ['a record that is a list', { ...delivery, record: [{ id: 'x' }] }, ['record']],
    ['an event without a name', { ...delivery, event: '' }, ['event']],
    ['a time that is not one', { ...delivery, receivedAt: 'yesterday' }, ['receivedAt']],
  ])('refuses %s, naming what is wrong', (_, data, paths) => {
    const check = readDelivery(data);
    expect(check.ok).toBe(false);
    expect(!check.ok && check.issues.map((issue) => issue.path)).toEqual(paths);
  });
});
