/**
 * Scenario 3: two workers share the queue; one of them is SIGKILLed in the middle of a handler
 * run, again and again, and started again each time. Its stalled runs finish on the survivor.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, expect, it, vi } from 'vitest';
import { SECRET, startCluster, type Cluster } from './harness/cluster.js';
import { expectInvariant, settle, tally } from './harness/invariant.js';
import { finishScenario } from './harness/report-row.js';
import { createSender } from './harness/sender.js';

const KILLS = 5;
/** The stream's bound, whatever happens to the kills. */
const MOST_DELIVERIES = 600;
let cluster: Cluster;

afterAll(() => cluster?.close());

it('finishes every run a SIGKILLed worker dropped, on the other worker, once', async () => {
  cluster = await startCluster();
  const receiver = await cluster.serve();
  // A lock of 1 s: a dead worker's runs move on after about a second.
  const env = { WORKER_LOCK_SECONDS: '1', HANDLER_DELAY_MS: '300' };
  await cluster.work({ ...env, WORKER_CONCURRENCY: '5' });
  const sender = createSender({ targets: () => [receiver.url], secret: SECRET });
  // Deliveries keep coming until the last kill, paced a little above what the workers drain: a
  // victim that takes seconds to start on a loaded machine still finds runs waiting, whereas a
  // fixed batch could be drained by the survivor before the last victim is up.
  let killing = true;
  let delivered = 0;
  const streaming = (async () => {
    while (killing && delivered < MOST_DELIVERIES) {
      delivered += 1;
      const id = `fb_kill_${delivered}`;
      await sender.deliver({ id, title: `Delivery ${id}`, rating: delivered % 5 });
      await sleep(40);
    }
  })();

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
  killing = false;
  await streaming;
  await settle(cluster, sender.acknowledged);

  const result = await tally(cluster, sender.sent, sender.acknowledged);
  expectInvariant(result);
  expect(result.acknowledged).toBe(delivered);
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
