import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defineConfig } from 'vitest/config';

// Every scenario appends its row here; the table reporter prints them at the end.
const results = join(tmpdir(), `feedback-receiver-reliability-${process.pid}.jsonl`);
rmSync(results, { force: true });
process.env.RELIABILITY_RESULTS = results;

/** `npm run test:reliability`: real processes, faults and hostile input; see docs/reliability.md. */
export default defineConfig({
  test: {
    include: ['test/reliability/**/*.test.ts'],
    // One scenario at a time: each starts several processes, and they time each other's work.
    fileParallelism: false,
    testTimeout: 240_000,
    hookTimeout: 60_000,
    env: { RELIABILITY_RESULTS: results },
    // The hostile-requests scenario asks each receiver's inspector for a full garbage collection
    // over a WebSocket. Node 22 has WebSocket as a global; Node 20 has the same client (undici's)
    // behind this flag.
    execArgv: Number(process.versions.node.split('.')[0]) < 22 ? ['--experimental-websocket'] : [],
    reporters: [
      'default',
      './test/reliability/harness/table-reporter.ts',
      './test/helpers/summary-reporter.ts',
    ],
  },
});
