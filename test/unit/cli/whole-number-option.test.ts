import { describe, expect, it } from 'vitest';
import { parseWholeNumber, UsageError } from '../../../src/cli/command.js';

describe('a numeric option', () => {
  // Number() alone took 0x10, 1e3 and ' 5', and read '' as 0.
  it.each([
    '0',
    '-1',
    '1.5',
    '1e20',
    '1e3',
    '100000000000000000000',
    'NaN',
    '',
    '0x10',
    ' 5',
    '5 ',
  ])('refuses %j as a usage error naming the option and its range', (value) => {
    const read = () => parseWholeNumber({ limit: value }, 'limit', 1);
    expect(read).toThrow(UsageError);
    expect(read).toThrow('--limit takes a whole number from 1 to 9007199254740991');
  });

  it('refuses a number past its max', () => {
    expect(() => parseWholeNumber({ port: '65536' }, 'port', 0, 65535)).toThrow(
      '--port takes a whole number from 0 to 65535',
    );
  });

  it.each([
    ['1', 1],
    ['0050', 50],
    ['9007199254740991', Number.MAX_SAFE_INTEGER],
  ])('takes %j as %d', (value, expected) => {
    expect(parseWholeNumber({ limit: value }, 'limit', 1)).toBe(expected);
  });
});
