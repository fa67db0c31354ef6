import type { Queue } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { createMetrics } from '../../src/metrics.js';

/** A queue whose counts never come: a worker's connection waits for a Redis that is away. */
const unanswered = {
  name: 'deliveries',
  getJobCounts: () => new Promise(() => {}),
} as unknown as Queue;

describe('the queue depths in a scrape', () => {
  it('are not said to be unread before anything is watched', async () => {
    const metrics = createMetrics();
    expect(await metrics.registry.metrics()).not.toContain('feedback_receiver_queue_jobs_read');
  });

  it('are left out, and the scrape answers, when the counts never come', async () => {
    const metrics = createMetrics();
    metrics.watchQueues([unanswered]);
    const text = await metrics.registry.metrics();
    expect(text).toContain('feedback_receiver_queue_jobs_read 0');
    expect(text).not.toMatch(/^feedback_receiver_queue_jobs\{/m);
    // The next scrape shares the same pending read instead of adding one.
    expect(await metrics.registry.metrics()).toContain('feedback_receiver_queue_jobs_read 0');
  });
});
