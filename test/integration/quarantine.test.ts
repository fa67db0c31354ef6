import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { postSigned } from '../helpers/signed-request.js';
import { createTestReceiver, type TestReceiver } from '../helpers/test-receiver.js';

// Not valid UTF-8 (0xC3 0x28, 0xFF), so not JSON either: must come back byte for byte.
const GARBLED = Buffer.from([
  0x7b, 0x22, 0x69, 0x64, 0x22, 0x3a, 0x22, 0xc3, 0x28, 0xff, 0x22, 0x7d,
]);

let receiver: TestReceiver;
afterEach(async () => {
  await receiver.close();
});

describe('quarantine (INVALID_PAYLOAD=quarantine)', () => {
  beforeEach(async () => {
    receiver = await createTestReceiver();
  });

  it('keeps an authentic but unparseable body byte for byte and answers 202', async () => {
    const response = await postSigned(receiver.app, GARBLED).expect(202);
    expect(response.body).toEqual({ status: 'quarantined', id: expect.stringMatching(/^q-/) });

    const entry = await receiver.quarantine.get(response.body.id);
    expect(entry?.body.equals(GARBLED)).toBe(true);
    expect(entry).toMatchObject({
      reason: 'unparseable',
      headers: {
        'content-type': 'application/json',
        'x-ybug-signature': expect.stringMatching(/^sha256=/),
      },
    });
    expect(await receiver.deliveries.queue.count()).toBe(0);
  });

  it('keeps a record that breaks the schema, with the issues, and logs a warning', async () => {
    const body = JSON.stringify({ id: 'fb_1', rating: 'five stars' });
    const response = await postSigned(receiver.app, body).expect(202);

    const entry = await receiver.quarantine.get(response.body.id);
    expect(entry?.body.toString()).toBe(body);
    expect(entry?.reason).toBe('schema');
    expect(entry?.issues).toEqual([{ path: 'rating', message: expect.any(String) }]);
    expect(receiver.logs).toContainEqual(
      expect.objectContaining({
        level: 40,
        outcome: 'quarantined',
        issues: [expect.objectContaining({ path: 'rating' })],
      }),
    );
  });

  it('lists newest first, reads, and deletes entries', async () => {
    const first = (await postSigned(receiver.app, '{"id": 1}').expect(202)).body.id;
    const second = (await postSigned(receiver.app, 'not json').expect(202)).body.id;

    const listed = await receiver.quarantine.list();
    expect(listed.map((entry) => entry.id)).toEqual([second, first]);
    expect(listed[0]).toMatchObject({ reason: 'unparseable', size: 8 });
    expect(listed[0]).not.toHaveProperty('body');
    expect(await receiver.quarantine.count()).toBe(2);

    expect(await receiver.quarantine.delete(first)).toBe(true);
    expect(await receiver.quarantine.delete(first)).toBe(false);
    expect(await receiver.quarantine.get(first)).toBeUndefined();
    expect((await receiver.quarantine.list()).map((entry) => entry.id)).toEqual([second]);
  });

  it('replays an entry through the same validation, and queues it once it passes', async () => {
    // An entry whose body is valid today, as after a fix to the schema or to the sender.
    const { id } = await receiver.quarantine.add({
      receivedAt: new Date().toISOString(),
      reason: 'schema',
      issues: [],
      headers: {},
      body: Buffer.from(JSON.stringify({ id: 'fb_fixed' })),
    });
    expect(await receiver.quarantine.replay(id, receiver.deliveries)).toEqual({
      id,
      status: 'queued',
      key: 'feedback.created:fb_fixed',
    });
    expect(await receiver.deliveries.queue.count()).toBe(1);
    expect(await receiver.quarantine.get(id)).toBeUndefined();
  });

  it('keeps an entry that is still invalid when replayed', async () => {
    const { id } = (await postSigned(receiver.app, '{"id": 1}').expect(202)).body;
    const result = await receiver.quarantine.replay(id, receiver.deliveries);
    expect(result).toMatchObject({ id, status: 'invalid', issues: [{ path: 'id' }] });
    expect(await receiver.quarantine.get(id)).toBeDefined();
    expect(await receiver.deliveries.queue.count()).toBe(0);
  });

  it('says not_found when replaying an entry that is gone', async () => {
    expect(await receiver.quarantine.replay('q-gone', receiver.deliveries)).toEqual({
      id: 'q-gone',
      status: 'not_found',
    });
  });

  it('does not quarantine a body whose signature is wrong', async () => {
    await postSigned(receiver.app, GARBLED, { secret: 'wrong' }).expect(401);
    expect(await receiver.quarantine.count()).toBe(0);
  });
});

describe('INVALID_PAYLOAD=reject', () => {
  beforeEach(async () => {
    receiver = await createTestReceiver({ invalidPayload: 'reject' });
  });

  it('answers 422 with what is wrong and keeps nothing', async () => {
    const response = await postSigned(receiver.app, { id: 'fb_1', rating: 'five' });
    expect(response.status).toBe(422);
    expect(response.body).toMatchObject({ code: 'PAYLOAD_INVALID' });
    expect(response.body.detail).toContain('rating');
    expect(await receiver.quarantine.count()).toBe(0);
    expect(await receiver.deliveries.queue.count()).toBe(0);
  });

  it('answers 422 to unparseable JSON', async () => {
    await postSigned(receiver.app, GARBLED).expect(422);
  });
});

describe("the quarantine's bounds", () => {
  const DAY_MS = 86_400_000;
  let clock = Date.parse('2026-03-02T10:00:00Z');
  const at = (ms: number) => {
    clock = ms;
  };
  const quarantined = async (body: string) =>
    (await postSigned(receiver.app, body).expect(202)).body.id as string;
  const listed = async () => (await receiver.quarantine.list()).map((entry) => entry.id);
  const dropped = async (bound: string) =>
    (
      await receiver.metrics.registry
        .getSingleMetric('feedback_receiver_quarantine_dropped_total')
        ?.get()
    )?.values.find((value) => value.labels.bound === bound)?.value ?? 0;

  it('keeps one entry for a body sent again, counting it and moving it to the front', async () => {
    receiver = await createTestReceiver({ now: () => clock });
    at(Date.parse('2026-03-02T10:00:00Z'));
    const first = await quarantined('{"id": 1}');
    at(clock + 1_000);
    const other = await quarantined('not json');
    at(clock + 1_000);
    // The sender's retry after a 503: the same body, signed again.
    expect(await quarantined('{"id": 1}')).toBe(first);

    expect(await receiver.quarantine.count()).toBe(2);
    expect(await listed()).toEqual([first, other]);
    expect(await receiver.quarantine.get(first)).toMatchObject({
      received: 2,
      receivedAt: '2026-03-02T10:00:02.000Z',
      firstReceivedAt: '2026-03-02T10:00:00.000Z',
    });
    expect(receiver.logs).toContainEqual(
      expect.objectContaining({ outcome: 'quarantined', quarantineId: first, received: 2 }),
    );
  });

  it('drops the oldest past its count, and says how many', async () => {
    receiver = await createTestReceiver({ now: () => clock, quarantineBounds: { maxEntries: 3 } });
    const ids: string[] = [];
    for (let n = 1; n <= 5; n += 1) {
      at(clock + 1_000);
      ids.push(await quarantined(`{"id": ${n}}`));
    }

    expect(await receiver.quarantine.count()).toBe(3);
    expect(await listed()).toEqual(ids.slice(2).reverse());
    expect(await receiver.quarantine.get(ids[0]!)).toBeUndefined();
    expect(receiver.logs).toContainEqual(
      expect.objectContaining({
        level: 40,
        quarantineId: ids[4],
        quarantineDropped: { age: 0, count: 1, bytes: 0 },
        msg: expect.stringContaining('1 older entries dropped'),
      }),
    );
    expect(await dropped('count')).toBe(2);
  });

  it('drops what was last received longer ago than its age, by the clock it is given', async () => {
    receiver = await createTestReceiver({ now: () => clock });
    const start = Date.parse('2026-03-02T10:00:00Z');
    at(start);
    const oldest = await quarantined('{"id": 1, "n": "oldest"}');
    at(start + DAY_MS);
    const younger = await quarantined('{"id": 1, "n": "younger"}');
    at(start + 3 * DAY_MS);
    // Sent again: its age counts from now.
    await quarantined('{"id": 1, "n": "oldest"}');
    at(start + 9 * DAY_MS);
    const newest = await quarantined('{"id": 1, "n": "newest"}');

    expect(await listed()).toEqual([newest, oldest]);
    expect(await receiver.quarantine.get(younger)).toBeUndefined();
    expect(await dropped('age')).toBe(1);
  });

  it('drops the oldest past the bytes of bodies it keeps, and frees the bytes of one deleted', async () => {
    receiver = await createTestReceiver({ now: () => clock, quarantineBounds: { maxBytes: 100 } });
    const body = (n: number) => `{"id": ${n}, "pad": "${'x'.repeat(20)}"}`; // 40 bytes
    const first = await quarantined(body(1));
    at(clock + 1);
    const second = await quarantined(body(2));
    at(clock + 1);
    await quarantined(body(3));
    expect(await receiver.quarantine.get(first)).toBeUndefined();
    expect(await receiver.quarantine.count()).toBe(2);
    expect(await dropped('bytes')).toBe(1);

    expect(await receiver.quarantine.delete(second)).toBe(true);
    at(clock + 1);
    await quarantined(body(4));
    expect(await receiver.quarantine.count()).toBe(2);
    expect(await dropped('bytes')).toBe(1);
  });

  it('replays an entry it kept after trimming others', async () => {
    receiver = await createTestReceiver({ now: () => clock, quarantineBounds: { maxEntries: 1 } });
    await quarantined('{"id": 1}');
    at(clock + 1);
    const { id } = await receiver.quarantine.add({
      receivedAt: new Date(clock).toISOString(),
      reason: 'schema',
      issues: [],
      headers: {},
      body: Buffer.from(JSON.stringify({ id: 'fb_kept' })),
    });
    expect(await receiver.quarantine.count()).toBe(1);
    expect(await receiver.quarantine.replay(id, receiver.deliveries)).toMatchObject({
      status: 'queued',
    });
    expect(await receiver.quarantine.count()).toBe(0);
  });

  it('searches the first kilobyte of each body, never whole bodies', async () => {
    receiver = await createTestReceiver();
    const id = await quarantined(
      `{"id": 1, "a": "near-the-start", "b": "${'x'.repeat(2_000)}far-in"}`,
    );
    expect((await receiver.quarantine.search('NEAR-the-start', 100)).map((e) => e.id)).toEqual([
      id,
    ]);
    expect(await receiver.quarantine.search('far-in', 100)).toEqual([]);
  });
});
