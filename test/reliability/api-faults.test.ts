/**
 * Scenario 5: the feedback API misbehaves. Each record's first PATCH gets one of: 429 with
 * Retry-After, 500, a dropped connection, or a slow answer; later ones succeed. Two workers run
 * auto-triage under one shared limit of 40 requests a minute, which the faults' retries push
 * past. Handlers retry; the limit holds at the API; no PATCH is applied twice for one delivery.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, expect, it } from 'vitest';
import { SECRET, startCluster, type Cluster } from './harness/cluster.js';
import { expectInvariant, settle, tally } from './harness/invariant.js';
import { finishScenario } from './harness/report-row.js';
import { createSender, keyOf } from './harness/sender.js';
import {
  API_TOKEN,
  startFakeFeedbackApi,
  type Answer,
  type FakeFeedbackApi,
} from '../helpers/fake-feedback-api.js';

const DELIVERIES = 30;
const LIMIT_PER_MINUTE = 40;
const FAULTS = ['429', '500', 'drop', 'slow', 'none'] as const;
let cluster: Cluster;
let api: FakeFeedbackApi;

afterAll(async () => {
  await cluster?.close();
  await api?.close();
});

it('retries through 429, 500, drops and slow answers within the limit, one PATCH each', async () => {
  cluster = await startCluster();
  api = await startFakeFeedbackApi();
  const applied: string[] = [];
  const attempts = new Map<string, number>();
  api.respondWith(async (request): Promise<Answer | undefined> => {
    const id = /^\/v1\/feedback\/(fb_faults_(\d+))$/.exec(request.path);
    if (request.method !== 'PATCH' || !id) return undefined;
    const attempt = (attempts.get(id[1]!) ?? 0) + 1;
    attempts.set(id[1]!, attempt);
    const fault = attempt === 1 ? FAULTS[Number(id[2]) % FAULTS.length] : 'none';
    if (fault === '429')
      return {
        status: 429,
        headers: { 'Retry-After': '1' },
        body: { errors: ['Too many requests'] },
      };
    if (fault === '500') return { status: 500, body: { errors: ['Internal error'] } };
    if (fault === 'drop') return 'drop';
    if (fault === 'slow') await sleep(1_500); // well within FEEDBACK_API_TIMEOUT_SECONDS
    applied.push(keyOf(id[1]!));
    return undefined; // the default answer: 200 with the updated record
  });

  const rules = join(cluster.dir, 'rules.json');
  await writeFile(
    rules,
    JSON.stringify({
      rules: [{ name: 'urgent', when: { field: 'id', exists: true }, set: { priority_id: 4 } }],
    }),
  );
  const env = {
    HANDLERS: '',
    TRIAGE_RULES: rules,
    FEEDBACK_API_URL: api.url,
    FEEDBACK_API_TOKEN: API_TOKEN,
    FEEDBACK_API_RATE_LIMIT: String(LIMIT_PER_MINUTE),
  };
  const receiver = await cluster.serve();
  await cluster.work(env);
  await cluster.work(env);
  const sender = createSender({ targets: () => [receiver.url], secret: SECRET });
  for (let n = 1; n <= DELIVERIES; n += 1) {
    await sender.deliver({ id: `fb_faults_${n}`, title: `Record ${n}`, priority_id: 2 });
  }
  await settle(cluster, sender.acknowledged, { timeoutMs: 150_000, effects: () => applied });

  const result = await tally(cluster, sender.sent, sender.acknowledged, { effects: applied });
  expectInvariant(result);
  expect(result.handled).toBe(DELIVERIES);

  // The limit held at the API: no 60-second window saw more PATCHes than allowed.
  const times = api.requests.filter((request) => request.method === 'PATCH').map((r) => r.at);
  const busiest = Math.max(
    ...times.map((start) => times.filter((at) => at >= start && at < start + 60_000).length),
  );
  expect(times.length).toBeGreaterThan(LIMIT_PER_MINUTE); // the faults pushed past the limit
  expect(busiest).toBeLessThanOrEqual(LIMIT_PER_MINUTE);
  // After a 429 with Retry-After: 1, that record's next PATCH waited at least the second.
  for (let n = 1; n <= DELIVERIES; n += 1) {
    if (FAULTS[n % FAULTS.length] !== '429') continue;
    const [first, second] = api.requests.filter((r) => r.path === `/v1/feedback/fb_faults_${n}`);
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(1_000);
  }

  const faulted = Array.from(
    { length: DELIVERIES },
    (_, n) => FAULTS[(n + 1) % FAULTS.length],
  ).filter((fault) => fault !== 'none').length;
  finishScenario({
    scenario: '5. the feedback API fails, throttles and stalls',
    result,
    notes: `${times.length} PATCHes for ${DELIVERIES} records (${faulted} first attempts faulted), busiest minute ${busiest} of ${LIMIT_PER_MINUTE} allowed, each record PATCHed once`,
    output: cluster.output(),
    answers: sender.answers,
    secrets: [SECRET, API_TOKEN],
  });
});
