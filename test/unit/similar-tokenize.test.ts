import { describe, expect, it } from 'vitest';
import { consideredText, CONSIDERED_CHARACTERS } from '../../src/similar/considered-text.js';
import { compactDocument, MAX_TERMS } from '../../src/similar/compact-document.js';
import { documentTerms } from '../../src/similar/document-terms.js';
import { termHash } from '../../src/similar/term-hash.js';
import { MAX_WORDS_PER_TEXT, tokenize } from '../../src/similar/tokenize.js';
import { urlWords } from '../../src/similar/url-words.js';

describe('tokenize', () => {
  it('lowercases words and folds compatibility forms', () => {
    expect(tokenize('Scrolling SCROLLED ｆｕｌｌｗｉｄｔｈ')).toEqual([
      'scrolling',
      'scrolled',
      'fullwidth',
    ]);
  });

  it('leaves out one-letter words and punctuation', () => {
    expect(tokenize('I can\u2019t pay!!! (v2.5)')).toEqual(['can', 'pay', 'v2']);
  });

  it('cuts Chinese and Japanese into overlapping pairs of characters', () => {
    expect(tokenize('支付按钮')).toEqual(['支付', '付按', '按钮']);
    expect(tokenize('ボタンが')).toEqual(['ボタ', 'タン', 'ンが']);
  });

  it('cuts a run that mixes scripts where the script changes', () => {
    expect(tokenize('iphone版本')).toEqual(['iphone', '版本']);
  });

  it('keeps right-to-left words whole', () => {
    expect(tokenize('زر الدفع لا يعمل')).toEqual(['زر', 'الدفع', 'لا', 'يعمل']);
    expect(tokenize('הכפתור לא עובד')).toEqual(['הכפתור', 'לא', 'עובד']);
  });

  it('treats emoji, control bytes and lone surrogates as separators', () => {
    expect(tokenize('pay\u0000button\u0007😡😡\u202e\ud800crash')).toEqual([
      'pay',
      'button',
      'crash',
    ]);
    expect(tokenize('😡🔥💳')).toEqual([]);
  });

  it('gives nothing for empty text', () => {
    expect(tokenize('')).toEqual([]);
  });

  it('stops after a bounded number of terms', () => {
    expect(tokenize('crash '.repeat(100_000))).toHaveLength(MAX_WORDS_PER_TEXT);
  });

  it('gives 7-bit text the words it gives the same text with a character past 7 bits', () => {
    // Seeded: every 7-bit unit, words of every length, up to the bound of words and past it.
    let seed = 30;
    const unit = () => {
      seed = (Math.imul(seed, 1_103_515_245) + 12_345) >>> 0;
      return seed >>> 25;
    };
    for (let text = 0; text < 300; text += 1) {
      const units = Array.from({ length: 1 + (text % 60) * 20 }, () =>
        // Mostly letters and digits, so words run long; any unit of 0 to 127 between.
        unit() < 96 ? 'aZ09xY5q'.charAt(unit() & 7) : String.fromCharCode(unit()),
      );
      const sevenBit = units.join('');
      // "é" alone is a word too short to keep: the text goes the general way, with the same words.
      for (const most of [MAX_WORDS_PER_TEXT, 7]) {
        expect(tokenize(sevenBit, most)).toEqual(tokenize(`${sevenBit} é`, most));
      }
    }
  });
});

describe('urlWords', () => {
  it('takes the words of the path, not the host, the query or ids', () => {
    expect(urlWords('https://shop.example.com/checkout/payment/12345?session=abc#top')).toEqual([
      'checkout',
      'payment',
    ]);
    expect(urlWords('/register')).toEqual(['register']);
  });

  it('reads a malformed escape as text', () => {
    expect(urlWords('/caf%E9%/menu')).toEqual(['caf', 'e9', 'menu']);
  });
});

describe('documentTerms', () => {
  const has = (terms: Map<number, number>, term: string) => terms.get(termHash(term));

  it('counts a word by its prefix, so other forms of it match', () => {
    const terms = documentTerms({ description: 'scrolling scrolled' });
    expect(has(terms, 'scro')).toBe(2);
  });

  it('counts a title word twice as much as a description word', () => {
    expect(has(documentTerms({ title: 'checkout', description: 'checkout' }), 'chec')).toBe(3);
  });

  it('counts pairs of consecutive words at half weight', () => {
    expect(has(documentTerms({ description: 'not loading' }), 'not load')).toBe(0.5);
  });

  it('shares pieces between a misspelt word and the right one', () => {
    const right = documentTerms({ description: 'unauthorized' });
    const wrong = documentTerms({ description: 'unautorized' });
    const shared = [...wrong.keys()].filter((hash) => right.has(hash));
    // "unau" with its edge, "unau", "naut" and the last four pieces (and the prefix "unau").
    expect(shared.length).toBeGreaterThanOrEqual(5);
    expect(right.has(termHash('unau'))).toBe(true);
  });

  it('takes the words of the URL path, at twice the weight of a description word', () => {
    expect(has(documentTerms({ url: 'https://example.com/checkout' }), 'chec')).toBe(2);
  });
});

describe('hostile records', () => {
  it('reads only the first few kilobytes of a 1 MB description', () => {
    const description = 'checkout fails. '.repeat(65_536);
    expect(description.length).toBeGreaterThan(1_000_000);
    expect(consideredText({ description }).description).toHaveLength(
      CONSIDERED_CHARACTERS.description,
    );
  });

  it('keeps at most the fixed number of terms, whatever the record', () => {
    const words = Array.from({ length: 5_000 }, (_, i) => `word${i.toString(36)}x`).join(' ');
    const document = compactDocument(documentTerms({ title: '', description: words }), () => 1);
    expect(document.hashes.length).toBe(MAX_TERMS);
  });

  it('bounds the weight of one word repeated 100 000 times', () => {
    const document = compactDocument(
      documentTerms({ description: 'lag '.repeat(100_000) }),
      () => 1,
    );
    expect([...document.counts].every((count) => count <= 255)).toBe(true);
    expect(document.hashes.length).toBe(2);
  });

  it('describes a record with no title, no description and no URL as no terms', () => {
    expect(documentTerms({ title: null }).size).toBe(0);
  });
});
