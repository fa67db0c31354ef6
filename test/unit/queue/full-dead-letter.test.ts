import { describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/logger.js';
import { watchForFullDeadLetters } from '../../../src/queue/full-dead-letter.js';

/** A watcher on a clock the test moves, and a queue whose failed count the test sets. */
function setUp() {
  const logs: Record<string, unknown>[] = [];
  const logger = createLogger({
    level: 'debug',
    destination: { write: (line: string) => void logs.push(JSON.parse(line)) },
  });
  let clock = 0;
  const queue = { name: 'runs-a', failed: 0, counted: 0 };
  const counted = {
    name: queue.name,
    getFailedCount: () => {
      queue.counted += 1;
      return Promise.resolve(queue.failed);
    },
  };
  const watch = watchForFullDeadLetters({ logger, warnEveryMs: 60_000, now: () => clock });
  const warnings = () => logs.filter((line) => line.level === 40);
  return {
    queue,
    warnings,
    tick: (ms: number) => void (clock += ms),
    failed: (removeOnFail: unknown) => watch(counted, { opts: { removeOnFail } as never }),
  };
}

describe('watchForFullDeadLetters', () => {
  it('says nothing while the failed jobs are fewer than the retention keeps', async () => {
    const { queue, warnings, failed } = setUp();
    queue.failed = 99;
    await failed({ age: 60, count: 100 });
    expect(warnings()).toEqual([]);
  });

  it('warns, naming the queue and the cap, once the failed jobs reach it', async () => {
    const { queue, warnings, failed } = setUp();
    queue.failed = 100;
    await failed({ age: 60, count: 100 });
    expect(warnings()).toMatchObject([{ queue: 'runs-a', cap: 100, failed: 100 }]);
  });

  it('warns at most once a minute per queue, and counts nothing in between', async () => {
    const { queue, warnings, failed, tick } = setUp();
    queue.failed = 100;
    await failed(100);
    tick(59_999);
    await failed(100);
    expect(warnings(), 'within the minute').toHaveLength(1);
    expect(queue.counted, 'counts').toBe(1);
    tick(1);
    await failed(100);
    expect(warnings(), 'a minute later').toHaveLength(2);
  });

  it('counts nothing for a retention that keeps every failed job, or none', async () => {
    const { queue, warnings, failed } = setUp();
    queue.failed = 5;
    for (const keep of [undefined, false, true, 0, { age: 60 }]) await failed(keep);
    expect(warnings()).toEqual([]);
    expect(queue.counted).toBe(0);
  });
});
