/** Summaries of repeated rounds: the median as the figure, the range as its spread. */
export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/** The spread of the rounds as ± half their range, in percent of the median. */
export function spreadPercent(values: readonly number[]): number {
  const middle = median(values);
  if (!Number.isFinite(middle) || middle === 0) return 0;
  return ((Math.max(...values) - Math.min(...values)) / 2 / middle) * 100;
}

export function ratio(ours: number, baseline: number): number {
  return baseline === 0 ? Number.NaN : ours / baseline;
}

/** The value below which `p` percent of the values lie (nearest rank). */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}
