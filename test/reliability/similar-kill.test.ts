/**
 * Scenario 18: grouping on three workers, one of them SIGKILLed again and again while it routes
 * reports of a few problems, each reported many times. Afterwards Redis holds every delivery in
 * exactly one group, each group's size counts each delivery once, and each group's crossing of
 * "5 within an hour" was seen by exactly one delivery.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, expect, it, vi } from 'vitest';
import { keyOfLineField } from '../../src/grouping/similar-keys.js';
import { PROBE_HANDLER, SECRET, startCluster, type Cluster } from './harness/cluster.js';
import { expectInvariant, settle, tally } from './harness/invariant.js';
import { finishScenario } from './harness/report-row.js';
import { createSender, keyOf } from './harness/sender.js';

const SIMILAR_PROBE = 'test/fixtures/handlers/similar-probe.mjs';
const KILLS = 4;
/** Problems, each reported this many times, in turn: a delivery of each problem every round. */
const PROBLEMS = [
  'The pay button stays grey after I enter my card details at checkout',
  'Search results page shows a blank white screen when I filter by price',
  'The password reset email never arrives even after waiting an hour',
];
/** The stream's bound, whatever happens to the kills: reports of each problem. */
const MOST_ROUNDS = 200;
let cluster: Cluster;

afterAll(() => cluster?.close());

it('keeps every delivery in one group, counted once, through workers killed while grouping', async () => {
  cluster = await startCluster();
  const receiver = await cluster.serve();
  const similarLog = join(cluster.dir, 'similar.log');
  const env = {
    HANDLERS: `${PROBE_HANDLER},${SIMILAR_PROBE}`,
    SIMILAR: 'on',
    SIMILAR_LOG: similarLog,
    WORKER_LOCK_SECONDS: '1',
    // The victim is killed once a run starts: the reliability probe's effect comes 300 ms later,
    // so the kill lands before it (as in scenario 3), not between the effect and the run's
    // completion, where any at-least-once system would run it again.
    HANDLER_DELAY_MS: '300',
  };
  await cluster.work({ ...env, WORKER_CONCURRENCY: '4' });
  await cluster.work({ ...env, WORKER_CONCURRENCY: '4' });
  const sender = createSender({ targets: () => [receiver.url], secret: SECRET });

  // Reports keep coming until the last kill, so each victim finds routings to take.
  let killing = true;
  let rounds = 0;
  const streaming = (async () => {
    while (killing && rounds < MOST_ROUNDS) {
      const round = rounds;
      await Promise.all(
        PROBLEMS.map((problem, p) =>
          sender.deliver({
            id: `fb_similar_${p}_${round}`,
            project_id: 'prj_similar',
            title: problem,
            description: `${problem}. Reported by visitor ${round}.`,
          }),
        ),
      );
      rounds += 1;
      await sleep(40);
    }
  })();

  for (let kill = 0; kill < KILLS; kill += 1) {
    const victim = await cluster.work({ ...env, WORKER_CONCURRENCY: '8' });
    // Killed once it has made a run: mid-stream, with routings in flight.
    await vi.waitFor(
      () => expect(cluster.runs().some((run) => run.pid === victim.child.pid)).toBe(true),
      { timeout: 30_000 },
    );
    await cluster.stop(victim, 'SIGKILL');
  }
  killing = false;
  await streaming;
  const total = PROBLEMS.length * rounds;
  await settle(cluster, sender.acknowledged);
  const result = await tally(cluster, sender.sent, sender.acknowledged);
  expectInvariant(result);
  expect(result.acknowledged).toBe(total);

  // Every probe run has logged (runs of the similar probe finish after the routing, like the
  // reliability probe's): wait until each delivery has its line.
  const lines = await vi.waitFor(
    () => {
      const read = readFileSync(similarLog, 'utf8').trim().split('\n');
      expect(new Set(read.map((line) => line.split(' ')[0])).size).toBe(total);
      return read.map((line) => line.split(' '));
    },
    { timeout: 30_000 },
  );

  // In Redis: each delivery in exactly one group's members, the one its grouping names.
  const client = cluster.client;
  const memberKeys: string[] = [];
  let cursor = '0';
  do {
    const [next, keys] = await client.scan(cursor, 'MATCH', `${cluster.prefix}:similar:*:group:*`);
    cursor = next;
    memberKeys.push(...keys);
  } while (cursor !== '0');
  const groupsOf = new Map<string, string[]>();
  for (const memberKey of memberKeys) {
    const group = memberKey.slice(memberKey.indexOf(':group:') + ':group:'.length);
    // A member is its delivery's line field (similar-keys.ts).
    for (const member of await client.zrange(memberKey, '0', '-1')) {
      const key = keyOfLineField(member);
      groupsOf.set(key, [...(groupsOf.get(key) ?? []), group]);
    }
  }
  const sizes = await Promise.all(memberKeys.map((key) => client.zcard(key)));
  expect(
    sizes.reduce((a, b) => a + b, 0),
    'members of all groups',
  ).toBe(total);
  for (let p = 0; p < PROBLEMS.length; p += 1) {
    for (let round = 0; round < rounds; round += 1) {
      const key = keyOf(`fb_similar_${p}_${round}`);
      expect(groupsOf.get(key), `the groups of ${key}`).toHaveLength(1);
    }
  }
  // The reports of one problem are one group, so the window crossed once per problem.
  const groupOfLine = new Map(lines.map(([key, group]) => [key!, group!]));
  for (let p = 0; p < PROBLEMS.length; p += 1) {
    const groups = new Set(
      Array.from({ length: rounds }, (_, round) =>
        groupOfLine.get(keyOf(`fb_similar_${p}_${round}`)),
      ),
    );
    expect(groups.size, `groups of problem ${p}`).toBe(1);
  }
  // Counted by delivery: a similar-probe run cut off by a kill after its line runs again, with
  // the same stored facts; a second delivery seeing the crossing would be the defect.
  const crossings = [
    ...new Set(lines.filter(([, , crossed]) => crossed === '1').map(([key]) => key)),
  ];
  expect(crossings, 'deliveries that saw a crossing').toHaveLength(PROBLEMS.length);

  finishScenario({
    scenario: '18. workers SIGKILLed while grouping',
    result,
    notes: `${KILLS} kills while routing; ${total} deliveries of ${PROBLEMS.length} problems in ${memberKeys.length} groups, each delivery in one; ${crossings.length} crossings of 5 within an hour, one per group`,
    output: cluster.output(),
    answers: sender.answers,
    secrets: [SECRET],
  });
});
