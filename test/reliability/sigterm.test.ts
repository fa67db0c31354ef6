/**
 * Scenario 4: the receiver gets SIGTERM under load and is started again on the same port; then
 * the worker does. Both exit 0; the senders' retries bridge the gap.
 */
import { afterAll, expect, it, vi } from 'vitest';
import { SECRET, startCluster, type Cluster } from './harness/cluster.js';
import { expectInvariant, settle, tally } from './harness/invariant.js';
import { finishScenario } from './harness/report-row.js';
import { createSender } from './harness/sender.js';

const DELIVERIES = 300;
let cluster: Cluster;

afterAll(() => cluster?.close());

it('handles every acknowledged delivery once across SIGTERM and restart', async () => {
  cluster = await startCluster();
  let receiver = await cluster.serve();
  // Back on the same address, as an orchestrator restarts a receiver behind a fixed port.
  const port = new URL(receiver.url).port;
  const worker = await cluster.work({ HANDLER_DELAY_MS: '10' });
  const sender = createSender({ targets: () => [receiver.url], secret: SECRET });
  const streaming = sender.stream(DELIVERIES, { prefix: 'sigterm', concurrency: 4 });

  await vi.waitFor(() => expect(sender.acknowledged.size >= 100, '100 acks').toBeTruthy(), {
    timeout: 30_000,
  });
  expect(await cluster.stop(receiver.cli)).toBe(0);
  receiver = await cluster.serve({ PORT: port });
  await vi.waitFor(() => expect(sender.acknowledged.size >= 200, '200 acks').toBeTruthy(), {
    timeout: 30_000,
  });
  expect(await cluster.stop(worker)).toBe(0);
  await cluster.work({ HANDLER_DELAY_MS: '10' });
  await streaming;
  await settle(cluster, sender.acknowledged);

  const result = await tally(cluster, sender.sent, sender.acknowledged);
  expectInvariant(result);
  expect(result.acknowledged).toBe(DELIVERIES);
  // The restart really happened under load: some posts found no receiver and were retried.
  const refused = sender.count(0) + sender.count(503);
  expect(refused).toBeGreaterThan(0);

  finishScenario({
    scenario: '4. SIGTERM and restart under load',
    result,
    notes: `receiver and worker each stopped (exit 0) and restarted; ${refused} posts refused meanwhile and retried`,
    output: cluster.output(),
    answers: sender.answers,
    secrets: [SECRET],
  });
});
