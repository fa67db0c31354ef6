/**
 * A realistic feedback.created delivery of about 3 KB: every field of the spec filled in, a
 * description of a few paragraphs, tags and custom fields, as a busy widget would send it.
 */
const DESCRIPTION = [
  'I added three items to the basket, went to checkout and chose to pay by card.',
  'After typing the card number the "Pay now" button stayed grey, even though every field was',
  'filled in and the address was accepted. Reloading the page kept the basket but the button',
  'was still grey. I tried another card and the same thing happened. On my phone it worked,',
  'so it seems to be this browser. The console shows an error about a blocked frame. I would',
  'really like to finish this order today because the discount code expires tonight.',
].join(' ');

export function feedbackRecord(id: string): Record<string, unknown> {
  return {
    id,
    feedback_id: Number.parseInt(id.replace(/\D/g, '').slice(-9) || '0', 10),
    project_id: 'prj_shop',
    title: 'Pay button stays grey after entering card details',
    reporter: { email: 'dana@example.com', name: 'Dana Müller', locale: 'de-DE' },
    assignee: { id: 'usr_payments_team', name: 'Payments team' },
    user_data: { plan: 'pro', account_age_days: 412, cart_total: 129.9, order_count: 17 },
    url: 'https://shop.example.com/checkout?step=payment&basket=8f2a91c4',
    description: `${DESCRIPTION}\n\n${DESCRIPTION}\n\n${DESCRIPTION}`,
    rating: 2,
    rating_type: 'stars',
    net_promoter_score: 3,
    priority_id: 2,
    priority: 'Normal',
    type_id: 1,
    type: 'Bug',
    status_id: 1,
    status: 'New',
    source_type: 'widget',
    created_at: '2026-11-20T09:14:03.512Z',
    updated_at: '2026-11-20T09:14:03.512Z',
    comment_count: 0,
    tags: [
      { id: 'tag_1', name: 'checkout' },
      { id: 'tag_2', name: 'payments' },
      { id: 'tag_3', name: 'desktop' },
    ],
    custom_fields: [
      { id: 'cf_1', name: 'Order number', value: 'A-99812' },
      { id: 'cf_2', name: 'Payment method', value: 'card' },
    ],
    client_context: {
      browser: 'Safari',
      browser_version: '18.1',
      os_name: 'macOS',
      os_version: '15.1',
      device_type: 'desktop',
      screen_width: 2560,
      screen_height: 1440,
      viewport_width: 1280,
      viewport_height: 720,
      screen_pixel_depth: 24,
      screen_pixel_ratio: 2,
      referrer: 'https://shop.example.com/cart',
      geo: { country_code: 'DE', region: 'Berlin', city: 'Berlin' },
    },
    screenshot_url: `https://cdn.example.com/screens/${id}.png`,
    video_url: `https://cdn.example.com/videos/${id}.webm`,
    console_log_url: `https://cdn.example.com/logs/${id}.json`,
  };
}

/** The delivery body for one record id, as the service sends it. */
export function deliveryBody(id: string): string {
  return JSON.stringify(feedbackRecord(id));
}
