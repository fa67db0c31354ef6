import { describe, expect, it } from 'vitest';
import { eachAsciiWord } from '../../src/ascii-words.js';

/** The words eachAsciiWord gives, until `most` have been taken. */
function words(text: string, shortest: number, longest: number, most = Infinity): string[] {
  const taken: string[] = [];
  eachAsciiWord(text, shortest, longest, (start, end) => {
    taken.push(text.slice(start, end));
    return taken.length < most;
  });
  return taken;
}

describe('eachAsciiWord', () => {
  it('gives the runs of a-z and 0-9 between anything else, at the start and the end too', () => {
    expect(words('ab-cd ef9_"x" 12', 1, Infinity)).toEqual(['ab', 'cd', 'ef9', 'x', '12']);
  });

  it('leaves out runs shorter than the shortest or longer than the longest', () => {
    expect(words('a bb ccc dddd', 2, 3)).toEqual(['bb', 'ccc']);
  });

  it('stops once a word is refused', () => {
    expect(words('one two three four', 1, Infinity, 2)).toEqual(['one', 'two']);
  });
});
