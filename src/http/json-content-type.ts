/** True for `application/json` and `application/<anything>+json`, with or without parameters. */
export function isJsonContentType(header: string | undefined): boolean {
  if (header === undefined) return false;
  const semicolon = header.indexOf(';');
  const mediaType = (semicolon === -1 ? header : header.slice(0, semicolon)).trim().toLowerCase();
  return mediaType === 'application/json' || /^application\/[\w.!#$&^-]+\+json$/.test(mediaType);
}

/**
 * Whether a JSON content type's charset, if it names one, is one JSON's bytes can be read as:
 * JSON is UTF-8 (RFC 8259), and ASCII is UTF-8 too. Another (utf-16, latin1) would be read wrongly.
 */
export function hasUtf8Charset(header: string): boolean {
  const charset = /;\s*charset\s*=\s*"?([^";\s]*)/i.exec(header)?.[1]?.toLowerCase();
  return charset === undefined || ['utf-8', 'utf8', 'us-ascii'].includes(charset);
}
