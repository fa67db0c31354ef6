/**
 * Scenario 16: a sender whose every delivery is invalid (a schema change at the sender: signed
 * correctly, but no longer a feedback record), 10 000 of them, while another sender's valid
 * deliveries come in. The quarantine keeps its bound and says what it drops; the valid deliveries
 * are answered 202 and handled once.
 */
import { afterAll, expect, it } from 'vitest';
import { signHmacSha256 } from '../../src/webhooks/hmac-sha256.js';
import { SECRET, startCluster, type Cluster } from './harness/cluster.js';
import { expectInvariant, settle, tally } from './harness/invariant.js';
import { finishScenario } from './harness/report-row.js';
import { createSender } from './harness/sender.js';

const INVALID = 10_000;
const VALID = 300;
const MOST_KEPT = 1_000;
const MiB = 1024 * 1024;
let cluster: Cluster;

afterAll(() => cluster?.close());

/** The sender's new schema: a numeric id and a rating in words, about 1.5 KiB each. */
const invalidBody = (n: number) =>
  JSON.stringify({
    event: 'feedback.created',
    data: { id: n, rating: 'five stars', title: `Changed schema ${n}`, notes: 'x'.repeat(1_400) },
  });

it(`keeps the quarantine within its bound through ${INVALID} invalid deliveries, and valid ones answered 202`, async () => {
  cluster = await startCluster();
  const receiver = await cluster.serve({ QUARANTINE_MAX_ENTRIES: String(MOST_KEPT) });
  await cluster.work();
  const memoryBefore = await usedMemory(cluster);

  const valid = createSender({ targets: () => [receiver.url], secret: SECRET });
  const invalidStatuses = new Map<number, number>();
  const invalidAnswers: string[] = [];
  let next = 0;
  const invalidLane = async () => {
    while (next < INVALID) {
      const body = invalidBody((next += 1));
      const response = await fetch(receiver.url, {
        method: 'POST',
        headers: {
          'Content-Type': 'application/json',
          'X-Ybug-Signature': signHmacSha256(body, SECRET),
        },
        body,
        signal: AbortSignal.timeout(10_000),
      });
      const text = await response.text();
      if (invalidAnswers.length < 100) invalidAnswers.push(text);
      invalidStatuses.set(response.status, (invalidStatuses.get(response.status) ?? 0) + 1);
    }
  };
  await Promise.all([
    ...Array.from({ length: 6 }, invalidLane),
    valid.stream(VALID, { prefix: 'valid', concurrency: 2 }),
  ]);

  // Every post of either sender answered 202 the first time: no 503, no retry.
  expect(Object.fromEntries(invalidStatuses)).toEqual({ 202: INVALID });
  expect(Object.fromEntries(valid.statuses)).toEqual({ 202: VALID });

  const kept = await cluster.quarantine.count();
  expect(kept).toBe(MOST_KEPT);
  // What the receiver said it dropped, line by line: exactly what the bound took. The last
  // answers can reach this process before their log lines do (another pipe): read until they are in.
  const droppedSaid = () =>
    cluster
      .output()
      .split('\n')
      .filter((line) => line.includes('"quarantineDropped"'))
      .reduce((sum, line) => sum + droppedOn(line), 0);
  await expect.poll(droppedSaid, { timeout: 10_000 }).toBe(INVALID - MOST_KEPT);
  const dropped = droppedSaid();
  const memoryAfter = await usedMemory(cluster);

  await settle(cluster, valid.acknowledged);
  const result = await tally(cluster, valid.sent, valid.acknowledged);
  expectInvariant(result);
  expect(result.handled).toBe(VALID);

  finishScenario({
    scenario: '16. a sender whose every delivery is invalid',
    result: {
      ...result,
      sent: result.sent + INVALID,
      acknowledged: result.acknowledged + INVALID,
      quarantined: kept,
    },
    notes: `${INVALID} signed invalid deliveries (1.5 KiB each) beside ${VALID} valid ones, all answered 202 at the first attempt; the quarantine kept ${kept} (QUARANTINE_MAX_ENTRIES=${MOST_KEPT}) and the receiver logged ${dropped} dropped, oldest first; Redis used ${memoryBefore.toFixed(1)} MiB before, ${memoryAfter.toFixed(1)} MiB after`,
    output: cluster.output(),
    answers: [...valid.answers, ...invalidAnswers],
    secrets: [SECRET],
  });
});

async function usedMemory(cluster: Cluster): Promise<number> {
  const info = await cluster.client.info('memory');
  return Number(/^used_memory:(\d+)/m.exec(info)?.[1]) / MiB;
}

/** The count a receiver's log line says it dropped; 0 for a line still being written. */
function droppedOn(line: string): number {
  try {
    return (JSON.parse(line) as { quarantineDropped: { count: number } }).quarantineDropped.count;
  } catch {
    return 0;
  }
}
