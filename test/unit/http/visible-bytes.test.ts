import { describe, expect, it } from 'vitest';
import { byteLabel, visibleBytes } from '../../../src/http/console/visible-bytes.js';

describe('visibleBytes', () => {
  it('keeps valid UTF-8, tabs and newlines as text', () => {
    expect(visibleBytes(Buffer.from('{"title":"Zürich 🚀"}\n\tok'))).toEqual([
      { text: '{"title":"Zürich 🚀"}\n\tok' },
    ]);
  });

  it('shows every byte outside valid UTF-8, and other control characters, as a byte', () => {
    const body = Buffer.concat([
      Buffer.from('a'),
      Buffer.from([0xff, 0xc3]), // an invalid byte, then a sequence cut short
      Buffer.from('b'),
      Buffer.from([0xed, 0xa0, 0x80]), // an encoded surrogate
      Buffer.from([0x00, 0x1b]),
      Buffer.from('c'),
    ]);
    expect(visibleBytes(body)).toEqual([
      { text: 'a' },
      { byte: 0xff },
      { byte: 0xc3 },
      { text: 'b' },
      { byte: 0xed },
      { byte: 0xa0 },
      { byte: 0x80 },
      { byte: 0x00 },
      { byte: 0x1b },
      { text: 'c' },
    ]);
    expect(byteLabel(0x0a)).toBe('\\x0A');
  });

  it('shows direction controls and C1 controls byte by byte, so nothing after them turns', () => {
    const body = Buffer.from('pay \u202Eevil\u2066 x\u0085y\u200F');
    const shown = visibleBytes(body)
      .map((segment) => ('text' in segment ? segment.text : byteLabel(segment.byte)))
      .join('');
    expect(shown).toBe('pay \\xE2\\x80\\xAEevil\\xE2\\x81\\xA6 x\\xC2\\x85y\\xE2\\x80\\x8F');
  });
});
