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
};

/** Text made safe for an element's content and for a quoted attribute value. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (character) => ENTITIES[character]!);
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
