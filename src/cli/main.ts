#!/usr/bin/env node
/**
 * `feedback-receiver <command>`. Exit codes: 0 done, 1 failed, 2 wrong usage. Errors are one plain
 * sentence on stderr, never a stack trace.
 */
import { createRequire } from 'node:module';
import { serve, serveHelp } from './serve.js';
import { UsageError } from './usage-error.js';
import { work, workHelp } from './work.js';

interface Command {
  readonly summary: string;
  readonly help: string;
  run(args: string[]): Promise<void>;
}

/** A command that takes no arguments besides --help. */
function withoutArguments(name: string, run: () => Promise<void>) {
  return async (args: string[]) => {
    if (args.length > 0) throw new UsageError(`${name} takes no arguments, got: ${args.join(' ')}`);
    await run();
  };
}

const commands: Record<string, Command> = {
  serve: {
    summary: 'run the HTTP receiver',
    help: serveHelp,
    run: withoutArguments('serve', serve),
  },
  work: {
    summary: 'run a worker that hands deliveries to the handlers',
    help: workHelp,
    run: withoutArguments('work', work),
  },
};

const usage = `Usage: feedback-receiver <command> [options]

Receives signed Ybug feedback webhooks and queues them for workers.

Commands:
${Object.entries(commands)
  .map(([name, command]) => `  ${name.padEnd(10)} ${command.summary}`)
  .join('\n')}

Options:
  -h, --help     show help (also after a command)
  -v, --version  show the version`;

async function main(argv: string[]): Promise<void> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '-h' || name === '--help' || name === 'help') {
    console.log(usage);
    return;
  }
  if (name === '-v' || name === '--version') {
    const require = createRequire(import.meta.url);
    console.log((require('../../package.json') as { version: string }).version);
    return;
  }
  const command = commands[name];
  if (!command) throw new UsageError(`unknown command "${name}"; see feedback-receiver --help`);
  if (rest.includes('-h') || rest.includes('--help')) {
    console.log(command.help);
    return;
  }
  await command.run(rest);
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
