import { readBulkSelection } from '../runs/bulk-selection.js';
import { LIMIT_OPTION, parseLimit, requireOption, UsageError, type Command } from './command.js';
import { plural } from './plural.js';
import { withQueues } from './redis-for-cli.js';
import { terminalText } from './terminal-text.js';

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
          `${terminalText(entry.id)}\n  handler ${terminalText(entry.handler)}, delivery ${terminalText(entry.deliveryKey)}, ${plural(entry.attempts, 'attempt')}, failed ${entry.failedAt ?? '?'}\n  ${terminalText(entry.reason)}`,
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
        console.log(`Queued ${plural(await deadLetter.retryAll(), 'failed run')} again.`);
      } else if (await deadLetter.retry(id)) {
        console.log(`Queued ${id} again.`);
      } else {
        throw new Error(`no failed run ${id}; see feedback-receiver deliveries failed`);
      }
    });
  },
};

export const deliveriesRunAgainCommand: Command = {
  name: 'deliveries run-again',
  summary: 'run a handler on every delivery a search finds (a backfill)',
  help: `Usage: feedback-receiver deliveries run-again --handler <name> [--since 24h]
         [--q <text>] [--state done|failed|running] [--yes]

Runs the handler on every delivery of the history that the search finds and whose
whole record is still kept: a run that completed or failed starts afresh, and a
delivery the handler never saw gets a run of it (a handler added today runs over
yesterday's feedback). --q searches as the console does (feedback id, delivery
key, words, reporter email); --since takes 30m, 24h or 7d. Without --yes it says
how many runs it would queue and queues none. Effects may happen twice.`,
  options: {
    handler: { type: 'string' },
    since: { type: 'string' },
    q: { type: 'string' },
    state: { type: 'string' },
    yes: { type: 'boolean' },
  },
  async run(values) {
    const handler = requireOption(values, 'handler', 'deliveries run-again');
    const check = readBulkSelection({
      action: 'run-again',
      handler,
      q: values.q,
      state: values.state,
      since: values.since,
    });
    // The selection's fields are this command's options, of the same names: said as options.
    if (!check.ok)
      throw new UsageError(`--${check.problem}; see feedback-receiver deliveries run-again --help`);
    await withQueues(async ({ bulk }) => {
      const plan = await bulk.plan(check.selection);
      console.log(
        `${plural(plan.deliveries, 'delivery', 'deliveries')} found; ${plural(plan.runs, 'run')} of ${handler} to queue (records still kept).`,
      );
      if (values.yes !== true) {
        if (plan.runs > 0) console.log('Nothing queued: add --yes to queue them.');
        return;
      }
      const done = await bulk.run(check.selection, (progress) =>
        console.log(`  ${progress.queued + progress.skipped} of ${progress.total}`),
      );
      if (done.state === 'failed')
        throw new Error(`stopped after ${plural(done.queued, 'run')}: ${done.error ?? ''}`);
      console.log(
        `Queued ${plural(done.queued, 'run')}${done.skipped > 0 ? `, skipped ${done.skipped} (under way or gone)` : ''}.`,
      );
    });
  },
};
