/**
 * Reads JSON with comments (`//`, `/* *\/`) and trailing commas, as editors write JSONC, so a
 * rules file can explain itself. Strings are left alone; comments become spaces and newlines stay,
 * so the line of a JSON error is still right.
 */
export function parseJsonc(text: string): unknown {
  return JSON.parse(toStrictJson(text));
}

export function toStrictJson(text: string): string {
  let out = '';
  let i = 0;
  while (i < text.length) {
    const char = text[i]!;
    if (char === '"') {
      const start = i;
      i += 1;
      while (i < text.length && text[i] !== '"') i += text[i] === '\\' ? 2 : 1;
      i += 1;
      out += text.slice(start, i);
    } else if (char === '/' && text[i + 1] === '/') {
      const end = text.indexOf('\n', i);
      const stop = end === -1 ? text.length : end;
      out += ' '.repeat(stop - i);
      i = stop;
    } else if (char === '/' && text[i + 1] === '*') {
      const end = text.indexOf('*/', i + 2);
      const stop = end === -1 ? text.length : end + 2;
      out += text.slice(i, stop).replace(/[^\n]/g, ' ');
      i = stop;
    } else if (char === ',' && /^\s*[\]}]/.test(withoutComments(text, i + 1))) {
      out += ' ';
      i += 1;
    } else {
      out += char;
      i += 1;
    }
  }
  return out;
}

/** The text from `start` up to the next character that is not white space or a comment. */
function withoutComments(text: string, start: number): string {
  let i = start;
  for (;;) {
    while (i < text.length && /\s/.test(text[i]!)) i += 1;
    if (text.startsWith('//', i)) {
      const end = text.indexOf('\n', i);
      i = end === -1 ? text.length : end;
    } else if (text.startsWith('/*', i)) {
      const end = text.indexOf('*/', i + 2);
      i = end === -1 ? text.length : end + 2;
    } else {
      return text.slice(i, i + 1);
    }
  }
}
