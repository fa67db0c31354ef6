/**
 * Text that came from outside (a sender's body, headers, or what validation said about them),
 * made safe to print on a terminal: every control character, and every character that reorders or
 * breaks lines, is shown as a visible escape (`\x1b`, `\n`, `\u202e`) instead of reaching the
 * terminal, where an escape sequence could recolour, retitle or rewrite what the operator sees.
 */

/**
 * C0 and C1 control characters and DEL, the line and paragraph separators, and the bidirectional
 * marks, embeddings, overrides and isolates ("Trojan Source").
 */
const UNSAFE = /[\p{Cc}\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]/gu;

const NAMED: Readonly<Record<string, string>> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

export interface TerminalTextOptions {
  /**
   * Keep newlines and tabs as they are, for text shown as lines of its own (a body); escape them
   * where a value must stay on its line (a listing). Default: false.
   */
  readonly keepLines?: boolean;
}

export function terminalText(
  text: string,
  { keepLines = false }: TerminalTextOptions = {},
): string {
  return text.replace(UNSAFE, (character) => {
    if (keepLines && (character === '\n' || character === '\t')) return character;
    const named = NAMED[character];
    if (named) return named;
    const code = character.codePointAt(0)!;
    return code < 0x100
      ? `\\x${code.toString(16).padStart(2, '0')}`
      : `\\u${code.toString(16).padStart(4, '0')}`;
  });
}
