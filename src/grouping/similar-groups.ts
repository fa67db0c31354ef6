/**
 * What the console reads of grouping (docs/similar.md): the groups of a time window, one group
 * with its deliveries, one delivery's group and matches, and the operator's one write, taking a
 * delivery out of its group. Every read is bounded: a page of groups, a page of deliveries.
 */
import type { SimilarFacts } from '../similar/similar-facts.js';

/** Width of one bar of a group's `arrivals` chart: the window is cut into this many buckets. */
export const ARRIVAL_BUCKETS = 24;

/** Most groups `list` returns. */
export const MOST_LISTED_GROUPS = 200;

/** Most deliveries `get` returns of a group, newest first. */
export const MOST_GROUP_DELIVERIES = 200;

/** A delivery of a group, as the console shows it. */
export interface GroupDelivery {
  readonly key: string;
  readonly recordId: string;
  readonly title: string;
  /** Arrival, ms since the epoch. */
  readonly at: number;
}

export interface SimilarGroupSummary {
  /** URL-safe and stable: made of the project and the group's first delivery's key. */
  readonly id: string;
  readonly project: string;
  /** Deliveries in the group, each counted once. */
  readonly size: number;
  readonly first: GroupDelivery;
  /** The last arrival, ms since the epoch. */
  readonly lastAt: number;
  /**
   * Arrivals per bucket over the asked window, oldest bucket first: ARRIVAL_BUCKETS buckets of
   * (now - sinceMs) / ARRIVAL_BUCKETS each. `get` counts over the last 24 hours.
   */
  readonly arrivals: readonly number[];
}

export interface SimilarGroupDetail extends SimilarGroupSummary {
  /** Newest first, at most MOST_GROUP_DELIVERIES. */
  readonly deliveries: readonly GroupDelivery[];
}

export interface ListGroupsQuery {
  /** Groups whose last arrival is after this (ms since the epoch). */
  readonly sinceMs: number;
  /** Only this project's groups. */
  readonly project?: string | undefined;
  /** Most groups returned; capped at MOST_LISTED_GROUPS. */
  readonly limit?: number | undefined;
}

export type DetachOutcome = 'detached' | 'alone' | 'not-found';

export interface SimilarGroups {
  /** Groups active since `sinceMs`, fastest-growing first (arrivals in the window, then size). */
  list(query: ListGroupsQuery): Promise<SimilarGroupSummary[]>;
  /** One group and its newest deliveries; undefined when there is no such group. */
  get(id: string): Promise<SimilarGroupDetail | undefined>;
  /** What grouping told the delivery's handlers; undefined when it was not grouped (or is gone). */
  ofDelivery(key: string): Promise<SimilarFacts | undefined>;
  /**
   * Takes the delivery out of its group: it becomes a group of its own, and stays one when its
   * routing runs again. 'alone' when it already was; 'not-found' when grouping does not know it.
   */
  detach(key: string): Promise<DetachOutcome>;
}
