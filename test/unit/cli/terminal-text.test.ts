import { describe, expect, it } from 'vitest';
import { terminalText } from '../../../src/cli/terminal-text.js';

describe('terminalText', () => {
  it('shows escape sequences, C1 controls, direction controls and NUL as escapes', () => {
    expect(terminalText('\u001b]0;x\u0007 \u0085 \u202Eab\u2066\u200F \u0000')).toBe(
      '\\x1b]0;x\\x07 \\x85 \\u202eab\\u2066\\u200f \\x00',
    );
  });

  it('keeps newlines and tabs only when asked to', () => {
    expect(terminalText('a\n\tb')).toBe('a\\n\\tb');
    expect(terminalText('a\n\tb', { keepLines: true })).toBe('a\n\tb');
  });
});
