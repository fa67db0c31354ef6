/**
 * The text of a record that similarity looks at: its title, its description and its page URL,
 * each cut to a fixed number of characters first, so a 1 MB description costs no more than its
 * first few kilobytes, whatever comes after.
 */
import type { FeedbackRecord } from '../webhooks/feedback-record.js';

/** Characters of each field kept. The description's opening states the problem; the rest is detail. */
export const CONSIDERED_CHARACTERS = { title: 512, description: 4_096, url: 1_024 } as const;

export interface ConsideredText {
  readonly title: string;
  readonly description: string;
  readonly url: string;
}

/** The fields a record needs for similarity; any feedback record has them (all optional). */
export type SimilarRecord = Pick<FeedbackRecord, 'title' | 'description' | 'url'>;

export function consideredText(record: SimilarRecord): ConsideredText {
  return {
    title: bounded(record.title, CONSIDERED_CHARACTERS.title),
    description: bounded(record.description, CONSIDERED_CHARACTERS.description),
    url: bounded(record.url, CONSIDERED_CHARACTERS.url),
  };
}

function bounded(value: unknown, characters: number): string {
  // A record that failed no schema may still carry a non-string here (the schema keeps unknown
  // shapes out, but callers may pass records of their own): such a field is no text.
  return typeof value === 'string' ? value.slice(0, characters) : '';
}
