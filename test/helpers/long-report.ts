/**
 * A report of more than MAX_TERMS terms (the worker bench's payload, bench/payload.ts): copies of
 * it keep only some of their terms, so their grouping depends on how the terms are chosen.
 */
import type { SimilarRecord } from '../../src/similar/considered-text.js';

const PARAGRAPH = [
  'I added three items to the basket, went to checkout and chose to pay by card.',
  'After typing the card number the "Pay now" button stayed grey, even though every field was',
  'filled in and the address was accepted. Reloading the page kept the basket but the button',
  'was still grey. I tried another card and the same thing happened. On my phone it worked,',
  'so it seems to be this browser. The console shows an error about a blocked frame. I would',
  'really like to finish this order today because the discount code expires tonight.',
].join(' ');

/** The long report, its order number `order` (a copy differs from another in that word). */
export function longReport(order: number): SimilarRecord {
  return {
    title: 'Pay button stays grey after entering card details',
    description: [PARAGRAPH, PARAGRAPH, `${PARAGRAPH} Order A-${order}.`].join('\n\n'),
    url: 'https://shop.example.com/checkout?step=payment&basket=8f2a91c4',
  };
}
