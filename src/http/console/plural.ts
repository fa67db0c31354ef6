/** A count with its noun, in the singular for one: "1 run", "3 runs". */
export function plural(count: number, singular: string, pluralForm = `${singular}s`): string {
  return `${count} ${count === 1 ? singular : pluralForm}`;
}
