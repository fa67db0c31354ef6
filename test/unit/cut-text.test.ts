import { describe, expect, it } from 'vitest';
import { cutText } from '../../src/cut-text.js';

describe('cutText', () => {
  it.each([
    ['a text as long as the cut, whole', 'abc', 3, 'abc'],
    ['a longer text, to the cut', 'abcdef', 3, 'abc'],
    ['a cut through a pair, one unit earlier', 'ab😀c', 3, 'ab'],
    ['a cut just after a pair, the pair kept', 'a😀c', 3, 'a😀'],
    ['a lone second half at the cut, as it is', 'ab\udc00c', 3, 'ab\udc00'],
  ])('leaves %s', (_what, text, units, expected) => {
    expect(cutText(text, units)).toBe(expected);
  });
});
