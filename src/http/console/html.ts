/**
 * HTML from templates that escape every value put into them, unless it is HTML made by `html`
 * itself. Feedback is written by anonymous visitors of our users' sites, so nothing from a record
 * may become markup: a page is built only with `html`, and text reaches it only through it.
 */

/** Markup made by `html`: the one kind of value a template puts in as it is. */
export class Html {
  readonly markup: string;
  constructor(markup: string) {
    this.markup = markup;
  }
  toString(): string {
    return this.markup;
  }
}

/**
 * @example
 * html`<td title="${record.url}">${record.title}</td>` // both escaped
 */
export function html(strings: TemplateStringsArray, ...values: readonly unknown[]): Html {
  let markup = strings[0]!;
  values.forEach((value, index) => {
    markup += render(value) + strings[index + 1]!;
  });
  return new Html(markup);
}

function render(value: unknown): string {
  if (value instanceof Html) return value.markup;
  if (Array.isArray(value)) return value.map(render).join('');
  if (value === undefined || value === null || value === false) return '';
  return escapeHtml(String(value));
}

const ENTITIES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
  // A browser drops NUL from a page's text unseen: shown as the replacement character instead,
  // as it shows one in an attribute, so that the operator sees something is there.
  '\0': '\uFFFD',
};

/** Text made safe for an element's content and for a quoted attribute value. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"'\0]/g, (character) => ENTITIES[character]!);
}

/**
 * Text written by someone outside (a visitor's title, a sender's id, an error about them),
 * isolated in `<bdi>`: a direction control in it (U+202E RIGHT-TO-LEFT OVERRIDE, say) turns that
 * text only, never the rest of its cell or heading, and its direction is its own.
 */
export function isolated(text: unknown): Html {
  return html`<bdi>${text}</bdi>`;
}

/**
 * The same for text where no markup can go (a page's `<title>`): FIRST STRONG ISOLATE before it
 * and POP DIRECTIONAL ISOLATE after, which close whatever it opened.
 */
export function isolatedText(text: string): string {
  return `\u2068${text}\u2069`;
}

/** A link target from untrusted input: an absolute http(s) URL, or nothing. */
export function safeHref(url: unknown): string | undefined {
  if (typeof url !== 'string') return undefined;
  try {
    const parsed = new URL(url);
    return parsed.protocol === 'http:' || parsed.protocol === 'https:' ? parsed.href : undefined;
  } catch {
    return undefined;
  }
}
