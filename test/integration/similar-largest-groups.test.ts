/**
 * `feedback-receiver groups` lists the largest groups of the span, against groups a real
 * grouping made in a real Redis: a large group that grows slowly is listed first, however many
 * faster-growing groups the span holds (the reader chooses the largest, not the largest of the
 * fastest-growing it gives the console), and the last line says how many there were.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { groupLines, groupsFooter } from '../../src/cli/groups.js';
import { createSimilarGroups, MOST_LISTED_GROUPS } from '../../src/grouping/similar-groups.js';
import { keyOfRecord, type Delivery } from '../../src/webhooks/delivery.js';
import { createTestWorkerEnv, type TestWorkerEnv } from '../helpers/test-worker.js';
import { testGrouping } from '../helpers/test-grouping.js';

let env: TestWorkerEnv;
beforeEach(async () => {
  env = await createTestWorkerEnv();
});
afterEach(() => env.close());

/** Made-up words of their own for each n: no two problems share a word. */
const words = (n: number) =>
  [0, 1, 2, 3, 4, 5].map(
    (i) =>
      `${String.fromCharCode(97 + i)}${(n * 7 + i).toString(36)}x${String.fromCharCode(97 + (n % 26))}`,
  );

/** A report of problem `n`; `copy` tells its copies apart. */
function report(n: number, copy: number): Delivery {
  const id = `fb_${n}_${copy}`;
  const [a, b, c, d, e, f] = words(n);
  return {
    key: keyOfRecord(id),
    event: 'feedback.created',
    receivedAt: new Date().toISOString(),
    record: { id, project_id: 'prj_shop', title: `${a} ${b} ${c}`, description: `${d} ${e} ${f}` },
  };
}

describe('the largest groups', () => {
  it('are listed first, also a slow one behind more fast ones than the console lists', async () => {
    const grouping = testGrouping({ connection: env.connection, prefix: env.prefix });
    // The large group: five reports before the span, one in it.
    for (let copy = 0; copy < 5; copy += 1) await grouping.group(report(0, copy));
    const before = Date.now();
    await vi.waitFor(() => expect(Date.now()).toBeGreaterThan(before), { interval: 1 });
    const sinceMs = Date.now() - 1;
    expect((await grouping.group(report(0, 5))).group.size).toBe(6);
    // More groups of two than the console lists, each growing faster in the span.
    for (let n = 1; n <= MOST_LISTED_GROUPS; n += 1) {
      await grouping.group(report(n, 0));
      expect((await grouping.group(report(n, 1))).group.size).toBe(2);
    }

    const groups = createSimilarGroups({
      connection: env.connection,
      prefix: env.prefix,
      ttlSeconds: 3600,
    });
    // As the CLI reads them.
    const found = await groups.list({ sinceMs, limit: MOST_LISTED_GROUPS, order: 'largest' });
    const [header, top, next] = groupLines(found, 2);
    expect(header).toMatch(/^Size/);
    // Its first's record id: this grouping wrote no history, where titles are read.
    expect(top).toMatch(/ {2}fb_0_0$/);
    expect(top).toMatch(/^ {3}6 /);
    expect(next).toMatch(/^ {3}2 /);
    const total = await groups.count({ sinceMs });
    expect(total).toBe(MOST_LISTED_GROUPS + 1);
    expect(groupsFooter(2, total, '1h')).toBe(
      '2 groups of 201 with a delivery in the last 1h, largest first.',
    );
    // The console's order is unchanged: the fastest-growing first.
    const console = await groups.list({ sinceMs, limit: MOST_LISTED_GROUPS });
    expect(console.map(({ size }) => size)).not.toContain(6);
  }, 60_000);
});
