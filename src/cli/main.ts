#!/usr/bin/env node
/**
 * `feedback-receiver <command>`. Exit codes: 0 done, 1 failed, 2 wrong usage. Errors are one plain
 * sentence on stderr, never a stack trace.
 */
import { createRequire } from 'node:module';
import { UsageError, type Command } from './command.js';
import { parseCommandLine } from './parse-command-line.js';
import {
  deliveriesFailedCommand,
  deliveriesRetryCommand,
  deliveriesRunAgainCommand,
} from './deliveries.js';
import { demoCommand } from './demo.js';
import { groupsCommand } from './groups.js';
import { healthcheckCommand } from './healthcheck.js';
import { hooksRegisterCommand } from './hooks-register.js';
import {
  quarantineListCommand,
  quarantineReplayCommand,
  quarantineShowCommand,
} from './quarantine.js';
import { runsUpgradeCommand } from './runs-upgrade.js';
import { sandboxCommand } from './sandbox.js';
import { sendCommand } from './send.js';
import { serveCommand } from './serve.js';
import { startCommand } from './start.js';
import { whoamiCommand } from './whoami.js';
import { workCommand } from './work.js';
import { terminalText } from './terminal-text.js';

const COMMANDS: readonly Command[] = [
  serveCommand,
  workCommand,
  startCommand,
  hooksRegisterCommand,
  whoamiCommand,
  sendCommand,
  deliveriesFailedCommand,
  deliveriesRetryCommand,
  deliveriesRunAgainCommand,
  groupsCommand,
  quarantineListCommand,
  quarantineShowCommand,
  quarantineReplayCommand,
  runsUpgradeCommand,
  sandboxCommand,
  demoCommand,
  healthcheckCommand,
];

const usage = `Usage: feedback-receiver <command> [options]

Receives signed Ybug feedback webhooks, queues them, and runs handlers on them.

Commands:
${commandList(COMMANDS)}

Run feedback-receiver <command> --help (or help <command>) for a command's options.
  -h, --help     show this help
  -v, --version  show the version`;

async function main(argv: string[]): Promise<void> {
  const [first, second] = argv;
  if (first === undefined) {
    // No command is a usage error: the help goes where errors go, so a script sees it fail.
    console.error(usage);
    process.exitCode = 2;
    return;
  }
  if (first === '-h' || first === '--help' || (first === 'help' && second === undefined)) {
    console.log(usage);
    return;
  }
  if (first === '-v' || first === '--version') {
    const require = createRequire(import.meta.url);
    console.log((require('../../package.json') as { version: string }).version);
    return;
  }
  if (first === 'help') {
    // `help <command>` says what `<command> --help` says, word for word.
    console.log(helpOf(argv.slice(1)));
    return;
  }
  if (first.startsWith('-')) {
    // The name alone: `--token=...` may carry what must not be echoed.
    const option = first.split('=')[0];
    throw new UsageError(`unknown option "${option}"; see feedback-receiver --help`);
  }
  const command = findCommand(first, second);
  if (!command) {
    const group = commandGroup(first);
    if (second === '-h' || second === '--help') {
      console.log(groupHelp(first, group));
      return;
    }
    throw new UsageError(
      `${first} needs one of: ${group.map((candidate) => candidate.name.split(' ')[1]).join(', ')}; see feedback-receiver ${first} --help`,
    );
  }
  const { values, positionals } = parseCommandLine(
    command,
    argv.slice(command.name.split(' ').length),
  );
  if (values.help) {
    console.log(command.help);
    return;
  }
  const { min, max } = command.positionals ?? { min: 0, max: 0 };
  if (positionals.length < min || positionals.length > max) {
    throw new UsageError(
      `${command.name} takes ${argumentCount(min, max)}, got ${positionals.length}; see feedback-receiver ${command.name} --help`,
    );
  }
  await command.run(values, positionals);
}

function findCommand(first: string, second: string | undefined): Command | undefined {
  return (
    COMMANDS.find((candidate) => candidate.name === `${first} ${second}`) ??
    COMMANDS.find((candidate) => candidate.name === first)
  );
}

/**
 * The commands whose first word is `first` (`deliveries`: failed, retry, run-again).
 * @throws {UsageError} when there are none: no such command.
 */
function commandGroup(first: string): Command[] {
  const group = COMMANDS.filter((candidate) => candidate.name.startsWith(`${first} `));
  if (group.length === 0) {
    throw new UsageError(`unknown command "${first}"; see feedback-receiver --help`);
  }
  return group;
}

/** What `help <words>` prints: a command's help, or a group's (`help deliveries`). */
function helpOf(words: readonly string[]): string {
  const name = words.join(' ');
  const command = COMMANDS.find((candidate) => candidate.name === name);
  if (command) return command.help;
  if (words.length === 1) return groupHelp(name, commandGroup(name));
  throw new UsageError(`unknown command "${name}"; see feedback-receiver --help`);
}

function argumentCount(min: number, max: number): string {
  if (max === 0) return 'no arguments';
  const count = min === max ? String(max) : min === 0 ? `at most ${max}` : `${min} to ${max}`;
  return `${count} ${max === 1 ? 'argument' : 'arguments'}`;
}

/** The commands, one a line, their summaries in one column. */
function commandList(commands: readonly Command[]): string {
  const width = Math.max(...commands.map((command) => command.name.length)) + 2;
  return commands.map((command) => `  ${command.name.padEnd(width)} ${command.summary}`).join('\n');
}

/** `feedback-receiver deliveries --help`: the commands of the group, each with its summary. */
function groupHelp(group: string, commands: readonly Command[]): string {
  return `Usage: feedback-receiver ${group} <command> [options]

Commands:
${commandList(commands)}

Run feedback-receiver ${group} <command> --help for a command's options.`;
}

// A reader that stopped reading (`quarantine list | head -1`) is not a failure: it has what it
// wanted, and there is nobody left to tell. The command goes on to its end (a bulk action stopped
// halfway would leave its work half done) and exits with its own code; what it still prints goes
// nowhere.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') {
    process.stdout.write = () => true;
    return;
  }
  console.error(`feedback-receiver: cannot write the output: ${error.message}`);
  process.exitCode = 1;
});

main(process.argv.slice(2)).catch((error: unknown) => {
  if (error instanceof UsageError) {
    console.error(`feedback-receiver: ${terminalText(error.message)}`);
    process.exit(2);
  }
  // Start-up problems (configuration, handler modules, rules file) explain themselves; anything
  // else gets the command's name in front. Never a stack trace.
  // A message may quote what a sender, a server or the command line gave: escaped, lines kept.
  const message = terminalText(error instanceof Error ? error.message : String(error), {
    keepLines: true,
  });
  console.error(
    message.startsWith('Invalid configuration') ? message : `feedback-receiver: ${message}`,
  );
  process.exit(1);
});
