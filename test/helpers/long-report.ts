/**
 * A report of more than MAX_TERMS terms (the worker bench's payload, bench/payload.ts): copies of
 * it keep only some of their terms, so their grouping depends on how the terms are chosen.
 */
import { PARAGRAPH } from '../../bench/payload.js';
import type { SimilarRecord } from '../../src/similar/considered-text.js';

/** The long report, its order number `order` (a copy differs from another in that word). */
export function longReport(order: number): SimilarRecord {
  return {
    title: 'Pay button stays grey after entering card details',
    description: [PARAGRAPH, PARAGRAPH, `${PARAGRAPH} Order A-${order}.`].join('\n\n'),
    url: 'https://shop.example.com/checkout?step=payment&basket=8f2a91c4',
  };
}
