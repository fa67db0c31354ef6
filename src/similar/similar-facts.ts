/**
 * What grouping tells the handlers of a delivery (`ctx.similar`), and the console's API shows
 * under a delivery's `similar`. Undefined when grouping is off (SIMILAR=off) or could not run.
 */

/** A group-size condition of a rule: `atLeast` deliveries of one group within `withinMs`. */
export interface SimilarWindow {
  readonly atLeast: number;
  readonly withinMs: number;
}

/**
 * An earlier delivery of the same project, scored against this one (0 to 1). Its title is not
 * here: grouping keeps none (the delivery history has it, and the console reads it there).
 */
export interface SimilarMatchFact {
  readonly key: string;
  readonly recordId: string;
  readonly score: number;
}

export interface SimilarFacts {
  readonly group: {
    /** Stable: the key of the group's first delivery. */
    readonly id: string;
    /** Deliveries in the group, this one included, each counted once. */
    readonly size: number;
    readonly first: { readonly key: string; readonly recordId: string };
  };
  /** Up to 10 earlier deliveries, best first. */
  readonly matches: readonly SimilarMatchFact[];
  /**
   * The windows (of those the running workers' handlers declare, whichever worker routed it)
   * that this delivery's arrival made true: for each window, exactly one delivery of a group
   * per crossing sees it here.
   */
  readonly crossed: readonly SimilarWindow[];
}

/** A match as the console shows it: with its title, from the delivery history ('' once gone). */
export interface ShownSimilarMatch extends SimilarMatchFact {
  readonly title: string;
}

/** A delivery's facts as the console shows them (its JSON API's `similar`): matches with titles. */
export interface ShownSimilarFacts extends Omit<SimilarFacts, 'matches'> {
  readonly matches: readonly ShownSimilarMatch[];
}
