import { describe, expect, it } from 'vitest';
import { recordWords, wordsOf } from '../../../src/history/search-terms.js';
import type { FeedbackRecord } from '../../../src/webhooks/feedback-record.js';

/**
 * The rule wordsOf keeps for plain ASCII, as a split: its character-code scan must agree. Of the
 * stop words, the random texts below can only make "by".
 */
function bySplit(text: string): string[] {
  const words = new Set<string>();
  for (const word of text.toLowerCase().split(/[^a-z0-9]+/)) {
    if (word.length >= 2 && word.length <= 40 && word !== 'by') words.add(word);
  }
  return [...words];
}

describe('wordsOf', () => {
  it('splits plain ASCII on everything but letters and digits, lower-cased, once each', () => {
    expect(wordsOf('Pay-button stays GREY; the "Pay now" button: 2x A1 a')).toEqual([
      'pay',
      'button',
      'stays',
      'grey',
      'now',
      '2x',
      'a1',
    ]);
  });

  it('keeps words of 2 to 40 characters, at the start and the end of the text too', () => {
    const forty = 'x'.repeat(40);
    expect(wordsOf(`${forty} ${forty}y ok`)).toEqual([forty, 'ok']);
    expect(wordsOf('ab')).toEqual(['ab']);
  });

  it('agrees with a split on random printable ASCII', () => {
    const alphabet = 'abcXYZ019 .-_@\t\n"\'~';
    let seed = 7;
    const next = () => (seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648);
    for (let round = 0; round < 200; round += 1) {
      const length = next() % 300;
      let text = '';
      for (let i = 0; i < length; i += 1) text += alphabet[next() % alphabet.length];
      expect(wordsOf(text)).toEqual(bySplit(text));
    }
  });

  it('leaves out every stop word, however often said, and keeps the words next to them', () => {
    expect(wordsOf('The cart and THE basket, then their theirs; the end')).toEqual([
      'cart',
      'basket',
      'theirs',
      'end',
    ]);
  });

  it('reads text beyond ASCII by letters and digits of any script', () => {
    expect(wordsOf('Café ÉTÉ naïve 東京')).toEqual(['café', 'été', 'naïve', '東京']);
  });
});

describe('recordWords', () => {
  /** A record whose description has 400 different words, each said twice. */
  const longReport = (first: string): FeedbackRecord =>
    ({
      id: 'fb_long',
      title: 'Checkout',
      description: [first, ...Array.from({ length: 400 }, (_, n) => `w${n} w${n}`)].join(' '),
      reporter: { email: 'ana@example.com' },
    }) as FeedbackRecord;

  it("keeps a record's first 300 different words, in order: title, reporter email, description", () => {
    const words = recordWords(longReport('slow'));
    expect(words).toHaveLength(300);
    expect(words.slice(0, 6)).toEqual(['checkout', 'ana', 'example', 'com', 'slow', 'w0']);
    expect(words.at(-1)).toBe('w294');
  });

  it('keeps the first 300 of text beyond ASCII too, the email among them', () => {
    const words = recordWords(longReport('café'));
    expect(words).toHaveLength(300);
    expect(words.slice(0, 6)).toEqual(['checkout', 'ana', 'example', 'com', 'café', 'w0']);
    expect(words.at(-1)).toBe('w294');
  });
});
