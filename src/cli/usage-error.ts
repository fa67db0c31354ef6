/** The command line was wrong: exit code 2, and the message says how to use it. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}
