#!/usr/bin/env node
/**
 * `feedback-receiver <command>`. Exit codes: 0 done, 1 failed, 2 wrong usage. Errors are one plain
 * sentence on stderr, never a stack trace.
 */
import { createRequire } from 'node:module';
import { parseArgs } from 'node:util';
import { UsageError, type Command } from './command.js';
import {
  deliveriesFailedCommand,
  deliveriesRetryCommand,
  deliveriesRunAgainCommand,
} from './deliveries.js';
import { demoCommand } from './demo.js';
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
${COMMANDS.map((command) => `  ${command.name.padEnd(18)} ${command.summary}`).join('\n')}

Run feedback-receiver <command> --help for a command's options.
  -h, --help     show this help
  -v, --version  show the version`;

async function main(argv: string[]): Promise<void> {
  const [first, second] = argv;
  if (first === undefined || first === '-h' || first === '--help' || first === 'help') {
    console.log(usage);
    return;
  }
  if (first === '-v' || first === '--version') {
    const require = createRequire(import.meta.url);
    console.log((require('../../package.json') as { version: string }).version);
    return;
  }
  const command =
    COMMANDS.find((candidate) => candidate.name === `${first} ${second}`) ??
    COMMANDS.find((candidate) => candidate.name === first);
  if (!command) {
    const group = COMMANDS.filter((candidate) => candidate.name.startsWith(`${first} `));
    throw new UsageError(
      group.length > 0
        ? `${first} needs one of: ${group.map((candidate) => candidate.name.split(' ')[1]).join(', ')}`
        : `unknown command "${first}"; see feedback-receiver --help`,
    );
  }
  const rest = argv.slice(command.name.split(' ').length);
  let parsed;
  try {
    parsed = parseArgs({
      args: rest,
      options: { ...command.options, help: { type: 'boolean', short: 'h' } },
      allowPositionals: true,
      strict: true,
    });
  } catch (error) {
    throw new UsageError(
      `${(error as Error).message.split('\n')[0]}; see feedback-receiver ${command.name} --help`,
    );
  }
  if (parsed.values.help) {
    console.log(command.help);
    return;
  }
  const { min, max } = command.positionals ?? { min: 0, max: 0 };
  if (parsed.positionals.length < min || parsed.positionals.length > max) {
    throw new UsageError(
      `${command.name} takes ${max === 0 ? 'no arguments' : `${min === max ? min : `${min} to ${max}`} argument(s)`}, got ${parsed.positionals.length}; see feedback-receiver ${command.name} --help`,
    );
  }
  await command.run(parsed.values, parsed.positionals);
}

main(process.argv.slice(2)).catch((error: unknown) => {
  if (error instanceof UsageError) {
    console.error(`feedback-receiver: ${error.message}`);
    process.exit(2);
  }
  // Start-up problems (configuration, handler modules, rules file) explain themselves; anything
  // else gets the command's name in front. Never a stack trace.
  const message = error instanceof Error ? error.message : String(error);
  console.error(
    message.startsWith('Invalid configuration') ? message : `feedback-receiver: ${message}`,
  );
  process.exit(1);
});
