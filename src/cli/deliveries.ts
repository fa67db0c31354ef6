import { LIMIT_OPTION, parseLimit, UsageError, type Command } from './command.js';
import { withQueues } from './redis-for-cli.js';

export const deliveriesFailedCommand: Command = {
  name: 'deliveries failed',
  summary: 'list handler runs in the dead letter',
  help: `Usage: feedback-receiver deliveries failed [--limit 50]

Lists the handler runs that failed for good (the dead letter), newest first:
run id, handler, delivery key, attempts, when, and why.`,
  options: LIMIT_OPTION,
  async run(values) {
    const limit = parseLimit(values);
    await withQueues(async ({ deadLetter }) => {
      const entries = await deadLetter.list({ limit });
      const total = await deadLetter.count();
      if (entries.length === 0) {
        console.log('The dead letter is empty.');
        return;
      }
      for (const entry of entries) {
        console.log(
          `${entry.id}\n  handler ${entry.handler}, delivery ${entry.deliveryKey}, ${entry.attempts} attempt(s), failed ${entry.failedAt ?? '?'}\n  ${entry.reason}`,
        );
      }
      console.log(
        `\n${entries.length} of ${total} shown. Retry with: feedback-receiver deliveries retry <id>|--all`,
      );
    });
  },
};

export const deliveriesRetryCommand: Command = {
  name: 'deliveries retry',
  summary: 'queue a failed handler run (or all of them) again',
  help: `Usage: feedback-receiver deliveries retry <run id>
       feedback-receiver deliveries retry --all

Queues failed handler runs again, with fresh attempts.`,
  options: { all: { type: 'boolean' } },
  positionals: { min: 0, max: 1 },
  async run(values, [id]) {
    if ((id === undefined) === (values.all !== true)) {
      throw new UsageError(
        'give one run id or --all; see feedback-receiver deliveries retry --help',
      );
    }
    await withQueues(async ({ deadLetter }) => {
      if (id === undefined) {
        console.log(`Queued ${await deadLetter.retryAll()} failed run(s) again.`);
      } else if (await deadLetter.retry(id)) {
        console.log(`Queued ${id} again.`);
      } else {
        throw new Error(`no failed run ${id}; see feedback-receiver deliveries failed`);
      }
    });
  },
};
