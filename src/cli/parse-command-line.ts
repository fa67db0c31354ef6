/**
 * A command's arguments, parsed by `util.parseArgs`, with wrong usage said in our words: Node's
 * own messages quote the option in a sentence meant for another program's users.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { UsageError, type Command, type OptionValues } from './command.js';

type Options = NonNullable<ParseArgsConfig['options']>;

/**
 * @throws {UsageError} for an option the command does not have, one without its value, or one
 *   given twice.
 */
export function parseCommandLine(
  command: Command,
  args: string[],
): { values: OptionValues; positionals: string[] } {
  const options: Options = { ...command.options, help: { type: 'boolean', short: 'h' } };
  const see = `see feedback-receiver ${command.name} --help`;
  // First leniently, to find what is wrong and name it; then strictly.
  const { tokens } = parseArgs({
    args,
    options,
    allowPositionals: true,
    strict: false,
    tokens: true,
  });
  const given = new Set<string>();
  for (const token of tokens) {
    if (token.kind !== 'option') continue;
    const option = Object.hasOwn(options, token.name) ? options[token.name] : undefined;
    if (!option) throw new UsageError(`${command.name} has no option ${token.rawName}; ${see}`);
    if (option.type === 'string' && token.value === undefined) {
      throw new UsageError(`${token.rawName} needs a value; ${see}`);
    }
    // The strict parse refuses `--limit -1` as "ambiguous" (it may be an option), and says how
    // only on lines of its own.
    if (option.type === 'string' && !token.inlineValue && token.value?.startsWith('-')) {
      const { rawName, value } = token;
      throw new UsageError(
        `${rawName} is followed by ${value}: give ${rawName} a value, or write ${rawName}=${value} if that is it; ${see}`,
      );
    }
    if (option.type === 'boolean' && token.value !== undefined) {
      throw new UsageError(`${token.rawName} takes no value; ${see}`);
    }
    // No command takes an option's value more than once; parseArgs would keep the last
    // silently (`groups --project a --project b` showing b alone).
    if (option.type === 'string' && given.has(token.name)) {
      throw new UsageError(`${token.rawName} is given more than once; give it once; ${see}`);
    }
    given.add(token.name);
  }
  let parsed: ReturnType<typeof parseArgs<{ options: typeof options; allowPositionals: true }>>;
  try {
    parsed = parseArgs({ args, options, allowPositionals: true, strict: true });
  } catch (error) {
    // What the checks above let through (`--url --file x`: a value that looks like an option).
    throw new UsageError(`${(error as Error).message.split('\n')[0]}; ${see}`);
  }
  const { values, positionals } = parsed;
  return { values: values as OptionValues, positionals };
}
