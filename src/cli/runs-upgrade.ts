import { LEGACY_RUNS_QUEUE } from '../runs/legacy-runs.js';
import type { Command } from './command.js';
import { withQueues } from './redis-for-cli.js';

export const runsUpgradeCommand: Command = {
  name: 'runs upgrade',
  summary: `move runs an earlier version left in "${LEGACY_RUNS_QUEUE}" to their handlers' queues`,
  help: `Usage: feedback-receiver runs upgrade [--failed]

Versions before the queue per handler kept every handler run in one queue,
"${LEGACY_RUNS_QUEUE}". Run this once the earlier version's workers are stopped: each
run still waiting or delayed there moves to its handler's queue (runs-<handler>),
with fresh attempts, where this version's workers take it. Safe to run again.

Failed runs stay where they are: --failed moves them too, which queues each one
again (a retry of the whole old dead letter).`,
  options: { failed: { type: 'boolean' } },
  async run(values) {
    await withQueues(async ({ moveLegacyRuns }) => {
      const { moved, failedLeft, activeLeft } = await moveLegacyRuns({
        includeFailed: values.failed === true,
      });
      console.log(`Moved ${moved} run${moved === 1 ? '' : 's'} to their handlers' queues.`);
      if (failedLeft > 0) {
        console.log(
          `${failedLeft} failed run${failedLeft === 1 ? ' stays' : 's stay'} in "${LEGACY_RUNS_QUEUE}": add --failed to queue them again.`,
        );
      }
      if (activeLeft > 0) {
        console.log(
          `${activeLeft} run${activeLeft === 1 ? ' is' : 's are'} still held by a worker of the earlier version: stop it, wait for its lock to expire, and run this again.`,
        );
      }
    });
  },
};
