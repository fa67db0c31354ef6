/**
 * A realistic feedback.created delivery of about 3 KB: the CLI's sample record (every field of
 * the spec) with a description of a few paragraphs, more tags and custom fields, and an assignee,
 * as a busy widget would send it.
 */
import { sampleRecord } from '../src/cli/send.js';

/**
 * The description's paragraph: a long report (more than MAX_TERMS terms), which the grouping
 * tests copy too (test/helpers/long-report.ts).
 */
export const PARAGRAPH = [
  'I added three items to the basket, went to checkout and chose to pay by card.',
  'After typing the card number the "Pay now" button stayed grey, even though every field was',
  'filled in and the address was accepted. Reloading the page kept the basket but the button',
  'was still grey. I tried another card and the same thing happened. On my phone it worked,',
  'so it seems to be this browser. The console shows an error about a blocked frame. I would',
  'really like to finish this order today because the discount code expires tonight.',
].join(' ');

export function feedbackRecord(id: string): Record<string, unknown> {
  return {
    ...sampleRecord(),
    id,
    title: 'Pay button stays grey after entering card details',
    assignee: { id: 'usr_payments_team', name: 'Payments team' },
    user_data: { plan: 'pro', account_age_days: 412, cart_total: 129.9, order_count: 17 },
    url: 'https://shop.example.com/checkout?step=payment&basket=8f2a91c4',
    description: [PARAGRAPH, PARAGRAPH, PARAGRAPH].join('\n\n'),
    tags: [
      { id: 'tag_1', name: 'checkout' },
      { id: 'tag_2', name: 'payments' },
      { id: 'tag_3', name: 'desktop' },
    ],
    custom_fields: [
      { id: 'cf_1', name: 'Order number', value: 'A-99812' },
      { id: 'cf_2', name: 'Payment method', value: 'card' },
    ],
    screenshot_url: `https://cdn.example.com/screens/${id}.png`,
    video_url: `https://cdn.example.com/videos/${id}.webm`,
    console_log_url: `https://cdn.example.com/logs/${id}.json`,
  };
}

/** The delivery body for one record id, as the service sends it. */
export function deliveryBody(id: string): string {
  return JSON.stringify(feedbackRecord(id));
}
