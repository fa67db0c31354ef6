/**
 * Similarity and grouping for one project, in memory: each record is compared with the earlier
 * ones, then joins a group. The pure core that the worker's Redis-backed grouping stores and the
 * offline evaluation replays.
 */
import { choiceRarity, choiceRarityRange } from './choice-rarity.js';
import { compactTerms, type CompactDocument, MAX_TERMS } from './compact-document.js';
import { DEFAULT_TERM_OPTIONS, recordTerms, type TermOptions } from './document-terms.js';
import type { SimilarRecord } from './considered-text.js';
import {
  BACKGROUND_WEIGHT,
  chooseGroup,
  DEFAULT_SIMILAR_THRESHOLD,
  SECOND_MEMBER_WEIGHT,
} from './grouping.js';
import {
  DEFAULT_MATCH_LIMIT,
  type QueryBounds,
  type SimilarMatch,
  SimilarityIndex,
} from './similarity-index.js';

export interface SimilarGrouperOptions {
  /** Confidence (see chooseGroup) from which a record joins a group. Default DEFAULT_SIMILAR_THRESHOLD. */
  readonly threshold?: number;
  /** How much a group's second-best member adds to its evidence. Default SECOND_MEMBER_WEIGHT. */
  readonly secondMemberWeight?: number;
  /** How much of the matches' background is taken off a group's evidence. Default BACKGROUND_WEIGHT. */
  readonly backgroundWeight?: number;
  /** Terms kept per record. Default MAX_TERMS. */
  readonly maxTerms?: number;
  readonly terms?: TermOptions;
  /** The index's query bounds (benches measure others). Default: the index's own. */
  readonly bounds?: QueryBounds;
}

export interface SimilarOutcome {
  /** Up to 10 earlier records, best first. */
  readonly matches: SimilarMatch[];
  /** The id of the group's first record. */
  readonly group: string;
  /** What is stored of the record. */
  readonly document: CompactDocument;
}

export class SimilarGrouper {
  readonly index: SimilarityIndex;
  private readonly groups: string[] = [];
  private readonly threshold: number;
  private readonly secondMemberWeight: number;
  private readonly backgroundWeight: number;
  private readonly maxTerms: number;
  private readonly termOptions: TermOptions;

  constructor(options: SimilarGrouperOptions = {}) {
    this.index = new SimilarityIndex(options.bounds);
    this.threshold = options.threshold ?? DEFAULT_SIMILAR_THRESHOLD;
    this.secondMemberWeight = options.secondMemberWeight ?? SECOND_MEMBER_WEIGHT;
    this.backgroundWeight = options.backgroundWeight ?? BACKGROUND_WEIGHT;
    this.maxTerms = options.maxTerms ?? MAX_TERMS;
    this.termOptions = options.terms ?? DEFAULT_TERM_OPTIONS;
  }

  /** Compares the record with those added before, adds it, and says which group it joined. */
  add(id: string, record: SimilarRecord): SimilarOutcome {
    const document = this.documentOf(record);
    const matches = this.index.query(document, DEFAULT_MATCH_LIMIT);
    const group =
      chooseGroup(
        matches,
        (match) => this.groups[match.ordinal]!,
        this.threshold,
        this.secondMemberWeight,
        this.backgroundWeight,
      ) ?? id;
    this.index.add(id, document);
    this.groups.push(group);
    return { matches, group, document };
  }

  /** Adds the record in a group of its own, compared with nothing: benches fill an index so. */
  addAlone(id: string, record: SimilarRecord): void {
    this.index.add(id, this.documentOf(record));
    this.groups.push(id);
  }

  private documentOf(record: SimilarRecord): CompactDocument {
    return compactTerms(
      recordTerms(record, this.termOptions, true),
      (hash) => choiceRarity(this.index.size, this.index.documentFrequency(hash)),
      this.maxTerms,
      choiceRarityRange(this.index.size),
    );
  }
}
