/**
 * A body exactly as received, as text a person can read: valid UTF-8 as it is, and every byte
 * that is not part of valid UTF-8, or of a control or direction character other than tab and
 * newline (U+202E, say, all three of its bytes), as a visible `\xNN`. Nothing is interpreted.
 */
export type Segment = { readonly text: string } | { readonly byte: number };

const strict = new TextDecoder('utf-8', { fatal: true });

export function visibleBytes(body: Uint8Array): Segment[] {
  const segments: Segment[] = [];
  let text = '';
  const flush = () => {
    if (text !== '') segments.push({ text });
    text = '';
  };
  for (let at = 0; at < body.length;) {
    const length = sequenceLength(body[at]!);
    const decoded = length === 0 ? undefined : decode(body.subarray(at, at + length));
    if (decoded === undefined || isHiddenControl(decoded)) {
      flush();
      segments.push({ byte: body[at]! });
      at += 1;
    } else {
      text += decoded;
      at += length;
    }
  }
  flush();
  return segments;
}

/** How long a UTF-8 sequence starting with `lead` is; 0 for a byte no sequence starts with. */
function sequenceLength(lead: number): number {
  if (lead < 0x80) return 1;
  if (lead >= 0xc2 && lead <= 0xdf) return 2;
  if (lead >= 0xe0 && lead <= 0xef) return 3;
  if (lead >= 0xf0 && lead <= 0xf4) return 4;
  return 0;
}

function decode(bytes: Uint8Array): string | undefined {
  try {
    return strict.decode(bytes);
  } catch {
    return undefined; // cut short, overlong, a surrogate, or beyond U+10FFFF
  }
}

/**
 * C0 and C1 controls and DEL, the line and paragraph separators, and the bidirectional marks,
 * embeddings, overrides and isolates, which would reorder the text after them unseen.
 */
const HIDDEN = /^[\p{Cc}\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]$/u;

function isHiddenControl(character: string): boolean {
  return character !== '\n' && character !== '\t' && HIDDEN.test(character);
}

/** `\xNN`, as a byte is shown. */
export function byteLabel(byte: number): string {
  return `\\x${byte.toString(16).padStart(2, '0').toUpperCase()}`;
}
