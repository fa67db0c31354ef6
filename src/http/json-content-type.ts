/** True for `application/json` and `application/<anything>+json`, with or without parameters. */
export function isJsonContentType(header: string | undefined): boolean {
  if (header === undefined) return false;
  const semicolon = header.indexOf(';');
  const mediaType = (semicolon === -1 ? header : header.slice(0, semicolon)).trim().toLowerCase();
  return mediaType === 'application/json' || /^application\/[\w.!#$&^-]+\+json$/.test(mediaType);
}
