/** A count with its noun, in the singular for one: "1 run", "3 runs". */
export function plural(count: number, singular: string, pluralForm = `${singular}s`): string {
  return `${count} ${noun(count, singular, pluralForm)}`;
}

/** The noun alone, for a count shown apart (in bold, say). */
export function noun(count: number, singular: string, pluralForm = `${singular}s`): string {
  return count === 1 ? singular : pluralForm;
}
