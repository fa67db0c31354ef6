/**
 * When grouping last took in a delivery, as `feedback-receiver groups` reads it to say why it
 * lists none: against a real worker's grouping in a real Redis.
 */
import { describe, expect, it } from 'vitest';
import { createSimilarGroups } from '../../src/grouping/similar-groups.js';
import { DEFAULT_SIMILAR_THRESHOLD } from '../../src/similar/grouping.js';
import { defineHandler } from '../../src/worker/handler.js';
import { startTestWorkerEnv } from '../helpers/test-worker.js';

const noop = defineHandler({ name: 'noop', handle: () => {} });

describe('lastGroupedAt', () => {
  it('is undefined when no worker groups, with or without a project', async () => {
    const env = await startTestWorkerEnv();
    await env.startWorker({ handlers: [noop] });
    await env.deliver({ id: 'fb_1', project_id: 'prj_shop', title: 'Pay button stays grey' });
    await env.completedRuns(1);
    const groups = createSimilarGroups({
      connection: env.connection,
      prefix: env.prefix,
      ttlSeconds: 3600,
    });
    expect(await groups.lastGroupedAt()).toBeUndefined();
    expect(await groups.lastGroupedAt('prj_shop')).toBeUndefined();
  });

  it("is the last delivery's time, of its project only, until the ttl has passed", async () => {
    const env = await startTestWorkerEnv();
    await env.startWorker({
      handlers: [noop],
      similar: { threshold: DEFAULT_SIMILAR_THRESHOLD, keep: 1_000 },
    });
    const before = Date.now();
    await env.deliver({ id: 'fb_1', project_id: 'prj_shop', title: 'Pay button stays grey' });
    await env.completedRuns(1);
    const after = Date.now();
    let clock = after;
    const groups = createSimilarGroups({
      connection: env.connection,
      prefix: env.prefix,
      ttlSeconds: 3600,
      now: () => clock,
    });
    const last = await groups.lastGroupedAt();
    expect(last).toBeGreaterThanOrEqual(before - 1_000);
    expect(last).toBeLessThanOrEqual(after);
    expect(await groups.lastGroupedAt('prj_shop')).toBe(last);
    expect(await groups.lastGroupedAt('prj_other')).toBeUndefined();
    clock = after + 3_600_000 + 1_000;
    expect(await groups.lastGroupedAt()).toBeUndefined();
    expect(await groups.lastGroupedAt('prj_shop')).toBeUndefined();
  });
});
