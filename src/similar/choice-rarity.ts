/**
 * The rarity a record's terms are chosen by (compact-document.ts): the index's rarity
 * (rarityOf), except that a term held by COMMON_HOLDERS earlier records or more counts as held by
 * that many.
 *
 * Why: the index counts the terms records kept, not all they had. Copies of a report of more
 * than MAX_TERMS terms made the terms the first copies kept ever more common, while those they
 * left out stayed rare, so after some sixty copies a copy kept other terms, no longer matched the
 * copies before it, and started a group of its own (docs/similar.md, "Choosing the terms"). Past
 * the cap, more copies no longer move a kept term's weight; the ones left out are taken up in turn
 * until every term of the report is at the cap, and from then on every copy keeps the same terms.
 * The index still scores matches with the plain rarity.
 */
import type { RarityRange } from './compact-document.js';
import { rarityOf } from './similarity-index.js';

/**
 * Holders from which a term is common for the choice. 20 to 30 keep the offline figures
 * (bench/similar-what-we-tried.md, "Fifth round"); 50 and more let 3 000 copies split again.
 */
export const COMMON_HOLDERS = 20;

/**
 * The rarities of the last count of documents asked for, by capped holders: a record's terms are
 * all chosen among the same count of documents, and capped, their holders take 21 values, so a
 * logarithm per value rather than per term.
 */
const remembered = { documents: -1, rarities: new Float64Array(COMMON_HOLDERS + 1) };

/** rarityOf with the holders capped at COMMON_HOLDERS. */
export function choiceRarity(documents: number, holding: number): number {
  const capped = Math.min(holding, COMMON_HOLDERS);
  if (!Number.isInteger(capped) || capped < 0) return rarityOf(documents, capped);
  if (remembered.documents !== documents) {
    remembered.documents = documents;
    remembered.rarities.fill(0);
  }
  // A rarity is at least 1: 0 is one not computed yet.
  return (remembered.rarities[capped] ||= rarityOf(documents, capped));
}

/** The least and the most choiceRarity gives among `documents`: at COMMON_HOLDERS and at none. */
export function choiceRarityRange(documents: number): RarityRange {
  return { least: choiceRarity(documents, COMMON_HOLDERS), most: choiceRarity(documents, 0) };
}
