import type { ReplayResult } from '../queue/quarantine.js';
import { LIMIT_OPTION, parseLimit, UsageError, type Command } from './command.js';
import { withQueues } from './redis-for-cli.js';
import { terminalText } from './terminal-text.js';

export const quarantineListCommand: Command = {
  name: 'quarantine list',
  summary: 'list signed deliveries that could not be read',
  help: `Usage: feedback-receiver quarantine list [--limit 50]

Lists quarantined deliveries (authentic, but not JSON or not a feedback record),
newest first (by when each was last received), with the reason. A body sent
again is one entry; the quarantine keeps at most QUARANTINE_MAX_ENTRIES,
QUARANTINE_MAX_AGE_DAYS and QUARANTINE_MAX_BYTES, dropping the oldest.`,
  options: LIMIT_OPTION,
  async run(values) {
    const limit = parseLimit(values);
    await withQueues(async ({ quarantine }) => {
      const entries = await quarantine.list({ limit });
      if (entries.length === 0) {
        console.log('The quarantine is empty.');
        return;
      }
      for (const entry of entries) {
        const first = entry.issues[0];
        const why = first ? `${first.path ? `${first.path}: ` : ''}${first.message}` : entry.reason;
        const times = entry.received > 1 ? ` (received ${entry.received} times)` : '';
        // One line per entry, whatever the sender's bytes hold.
        console.log(
          terminalText(
            `${entry.id}  ${entry.receivedAt}${times}  ${entry.size} bytes  ${entry.reason}: ${why}`,
          ),
        );
      }
      console.log(`\n${entries.length} of ${await quarantine.count()} shown.`);
    });
  },
};

export const quarantineShowCommand: Command = {
  name: 'quarantine show',
  summary: 'print one quarantined delivery, with its body',
  help: `Usage: feedback-receiver quarantine show <id>

Prints the entry's reason, issues and headers, then its body as received (as
base64 if it is not valid UTF-8). Control characters and escape sequences in
them are shown as escapes (\\x1b, \\r), never sent to the terminal.`,
  positionals: { min: 1, max: 1 },
  async run(_values, [id]) {
    await withQueues(async ({ quarantine }) => {
      const entry = await quarantine.get(id!);
      if (!entry) throw new Error(`no quarantined delivery ${id}`);
      const { body, ...meta } = entry;
      // JSON escapes C0 controls in strings, not DEL, C1 controls or the bidirectional marks.
      console.log(terminalText(JSON.stringify(meta, null, 2), { keepLines: true }));
      let text: string;
      try {
        text = terminalText(new TextDecoder('utf-8', { fatal: true }).decode(body), {
          keepLines: true,
        });
      } catch {
        text = `(not UTF-8; base64) ${body.toString('base64')}`;
      }
      console.log(`\nbody (${body.length} bytes):\n${text}`);
    });
  },
};

export const quarantineReplayCommand: Command = {
  name: 'quarantine replay',
  summary: 'run quarantined deliveries through validation again, and queue those that pass',
  help: `Usage: feedback-receiver quarantine replay <id>
       feedback-receiver quarantine replay --all

Runs each entry's body through the same validation as a new delivery (--all:
every entry there is when it starts, oldest first). Those
that pass are queued (or found to be duplicates) and leave the quarantine; those
still invalid stay, and the command exits 1.`,
  options: { all: { type: 'boolean' } },
  positionals: { min: 0, max: 1 },
  async run(values, [id]) {
    if ((id === undefined) === (values.all !== true)) {
      throw new UsageError('give one id or --all; see feedback-receiver quarantine replay --help');
    }
    await withQueues(async ({ quarantine, deliveries }) => {
      // --all: the entries there are now, oldest first, each replayed once.
      const ids =
        id !== undefined
          ? [id]
          : (await quarantine.list({ limit: await quarantine.count() }))
              .map((entry) => entry.id)
              .reverse();
      if (ids.length === 0) {
        console.log('The quarantine is empty: nothing to replay.');
        return;
      }
      const results: ReplayResult[] = [];
      for (const entryId of ids) results.push(await quarantine.replay(entryId, deliveries));
      for (const result of results) console.log(terminalText(describe(result)));
      const stuck = results.filter(
        (result) => result.status === 'invalid' || result.status === 'not_found',
      );
      if (stuck.length > 0) {
        process.exitCode = 1;
        console.log(`\n${stuck.length} of ${results.length} not replayed.`);
      }
    });
  },
};

function describe(result: ReplayResult): string {
  switch (result.status) {
    case 'invalid':
      return `${result.id}: still invalid (${result.issues.map((issue) => `${issue.path || 'body'}: ${issue.message}`).join('; ')}); kept`;
    case 'not_found':
      return `${result.id}: no such entry`;
    default:
      return `${result.id}: ${result.status}${result.key ? ` as ${result.key}` : ''}`;
  }
}
