/**
 * A failure's cause: its reason with what differs from one record to the next taken out, so that
 * one outage's hundreds of failures ("the API answered 404 for feedback 123", "... 456") make one
 * group in the dead letter. What stays is what the operator acts on: the handler's words, the
 * feedback API's host, and an HTTP status where the text says it is one.
 */

/** What stands for each value taken out. Holds no digit or quote, so a cause is its own cause. */
export const ELIDED = '…';

const UUID = /\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi;

/** Text in quotes: "…", “…”, `…`, and '…' where the quote is not an apostrophe. */
const QUOTED = /"[^"\n]*"|“[^”\n]*”|`[^`\n]*`|(?<![\p{L}\p{N}])'[^'\n]*'(?![\p{L}\p{N}])/gu;

/** An http(s) URL: its origin stays, its path and query name records (/feedbacks/fb_x?page=2). */
const URL = /(https?:\/\/\S+)/;

/**
 * A path segment that names a record rather than a kind of thing: it has a digit or an `_`
 * (an API version such as v1 is a kind of thing).
 */
const RECORD_SEGMENT = /^(?!v\d{1,2}$)[^/]*[\d_][^/]*$/;

/** A word with a digit in it: a number, a hex id, a record id such as fb_123 or job-42. */
const WITH_A_DIGIT = /[\p{L}\p{N}_-]*\d[\p{L}\p{N}_.:-]*/gu;

/**
 * A short name ending in a small number names a kind of thing, not a record: base64, utf8,
 * sha256, oauth2, ipv6, S3. Two failures that differ there differ in cause.
 */
const NAME_WITH_A_NUMBER = /^\p{L}{1,6}\d{1,3}$/u;

/** Words after which a three-digit number is an HTTP status, which says what went wrong. */
const STATUS_BEFORE = /(?:\(|\b(?:answered|answer|status|code|HTTP|returned|responded|with)\s+)$/i;

/** Long runs of hex letters with no digit (deadbeefcafe) are ids too. */
const HEX_ID = /\b[0-9a-f]{12,}\b/gi;

/**
 * The reason of a failure with its values elided.
 *
 * @example
 * failureCause('the API answered 404 for feedback 123') // 'the API answered 404 for feedback …'
 */
export function failureCause(reason: string): string {
  return reason
    .split(URL)
    .map((piece, index) => (index % 2 === 1 ? elideUrl(piece) : elideText(piece)))
    .join('');
}

function elideText(text: string): string {
  return text
    .replace(UUID, ELIDED)
    .replace(QUOTED, (quoted) => `${quoted[0]}${ELIDED}${quoted.at(-1)}`)
    .replace(WITH_A_DIGIT, (word, offset: number, whole: string) => {
      // A sentence's full stop (or a colon) after a number stays a full stop.
      const tail = /[.:]+$/.exec(word)?.[0] ?? '';
      const value = word.slice(0, word.length - tail.length);
      return isStatus(value, whole.slice(0, offset)) || NAME_WITH_A_NUMBER.test(value)
        ? word
        : ELIDED + tail;
    })
    .replace(HEX_ID, ELIDED);
}

function isStatus(value: string, before: string): boolean {
  return /^[1-5]\d\d$/.test(value) && STATUS_BEFORE.test(before);
}

/** `https://host/v1/projects/prj_7/feedbacks/fb_1?x=1` → `https://host/v1/projects/…/feedbacks/…?…` */
function elideUrl(url: string): string {
  const [, origin = url, rest = '', tail = ''] =
    /^(https?:\/\/[^/?#]*)(.*?)([).,:;]*)$/.exec(url) ?? [];
  const [path = '', query] = rest.split(/(?=[?#])/, 2);
  const segments = path
    .split('/')
    .map((segment) => (RECORD_SEGMENT.test(segment) ? ELIDED : segment))
    .join('/');
  return origin + segments + (query === undefined ? '' : `${query[0]}${ELIDED}`) + tail;
}
