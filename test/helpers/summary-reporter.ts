import type { SerializedError } from 'vitest';
import type { Reporter, TestModule } from 'vitest/node';

/**
 * Ends the run with one plain line, `N passed, N failed, N skipped`, for CI logs to read. A test
 * file that fails to load or to set up counts as a failure of its own (vitest reports the tests a
 * failed `beforeAll` kept from running as skipped), and so does an error outside any test.
 */
export default class SummaryReporter implements Reporter {
  onTestRunEnd(
    testModules: ReadonlyArray<TestModule>,
    unhandledErrors: ReadonlyArray<SerializedError>,
  ): void {
    const counts = { passed: 0, failed: unhandledErrors.length, skipped: 0, pending: 0 };
    for (const testModule of testModules) {
      let failedTests = 0;
      for (const test of testModule.children.allTests()) {
        const { state } = test.result();
        counts[state] += 1;
        if (state === 'failed') failedTests += 1;
      }
      if (testModule.state() === 'failed' && failedTests === 0) counts.failed += 1;
    }
    process.stdout.write(
      `\n${counts.passed} passed, ${counts.failed} failed, ${counts.skipped} skipped\n`,
    );
  }
}
