/**
 * Scenario 3: two workers share the queue; one of them is SIGKILLed in the middle of a handler
 * run, again and again, and started again each time. Its stalled runs finish on the survivor.
 */
import { afterAll, expect, it, vi } from 'vitest';
import { SECRET, startCluster, type Cluster } from './harness/cluster.js';
import { expectInvariant, settle, tally } from './harness/invariant.js';
import { finishScenario } from './harness/report-row.js';
import { createSender } from './harness/sender.js';

const DELIVERIES = 150;
const KILLS = 5;
let cluster: Cluster;

afterAll(() => cluster?.close());

it('finishes every run a SIGKILLed worker dropped, on the other worker, once', async () => {
  cluster = await startCluster();
  const receiver = await cluster.serve();
  // A lock of 1 s: a dead worker's runs move on after about a second.
  const env = { WORKER_LOCK_SECONDS: '1', HANDLER_DELAY_MS: '300' };
  await cluster.work({ ...env, WORKER_CONCURRENCY: '5' });
  const sender = createSender({ targets: () => [receiver.url], secret: SECRET });
  const streaming = sender.stream(DELIVERIES, { prefix: 'kill', concurrency: 4 });

  const interrupted: string[] = [];
  for (let kill = 0; kill < KILLS; kill += 1) {
    // One run at a time on the victim, so the kill lands inside that run's 300 ms of work.
    const victim = await cluster.work({ ...env, WORKER_CONCURRENCY: '1' });
    const run = await vi.waitFor(
      () => {
        const value = cluster.runs().find((entry) => entry.pid === victim.child.pid);
        expect(value, 'the victim to start a run').toBeTruthy();
        return value!;
      },
      { timeout: 20_000 },
    );
    await cluster.stop(victim, 'SIGKILL');
    interrupted.push(run.key);
  }
  await streaming;
  await settle(cluster, sender.acknowledged);

  const result = await tally(cluster, sender.sent, sender.acknowledged);
  expectInvariant(result);
  expect(result.acknowledged).toBe(DELIVERIES);
  // Each interrupted run was run again by another process and finished there.
  const effects = new Set(cluster.effects());
  for (const key of interrupted) {
    expect(effects.has(key)).toBe(true);
    expect(cluster.runs().filter((entry) => entry.key === key).length).toBeGreaterThan(1);
  }

  finishScenario({
    scenario: '3. a worker SIGKILLed mid-run, again and again',
    result,
    notes: `${KILLS} kills mid-run; each dropped run finished on another worker`,
    output: cluster.output(),
    answers: sender.answers,
    secrets: [SECRET],
  });
});
