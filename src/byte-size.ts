const UNITS: Record<string, number> = { b: 1, kb: 1024, mb: 1024 ** 2, gb: 1024 ** 3 };

/**
 * Parses a size as Express and body-parser write it: `1048576`, `512kb`, `1mb`, `1.5 MB`
 * (units are binary: 1kb = 1024 bytes). Returns undefined for anything else.
 */
export function parseByteSize(text: string): number | undefined {
  const match = /^\s*(\d+(?:\.\d+)?)\s*(b|kb|mb|gb)?\s*$/i.exec(text);
  if (!match) return undefined;
  const bytes = Math.floor(Number(match[1]) * UNITS[(match[2] ?? 'b').toLowerCase()]!);
  return Number.isSafeInteger(bytes) ? bytes : undefined;
}
