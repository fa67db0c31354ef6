/**
 * Where grouping keeps a project's deliveries in Redis. Every key of one project shares one hash
 * tag (the project id in braces), so a script can touch them together on a cluster too.
 *
 * A group is known within its project by its first delivery's stream entry id (short: it is
 * stored once per delivery and per member); the group an operator detaches a group's first
 * delivery into has `.d` after it (`.d2`, `.d3`, ... when it is detached again from a group that
 * others joined since). Its public id adds the project, so a reader finds it from the id alone,
 * and is URL-safe: base64url of the project, a dot, the group's id within the project.
 */

export interface ProjectKeys {
  /**
   * The stream of entries: k (delivery key, '' when it is made of the record id), r (record id),
   * d (compact document); an entry written before this version has t (its title's first 60
   * characters) too.
   */
  readonly docs: string;
  /**
   * A delivery's line field (lineField) -> its stored grouping (stored-grouping.ts), or
   * `pending:<entry id>`. A line written before this version is under the delivery's key.
   */
  readonly of: string;
  /** The project's groups (their ids within the project), scored by their last arrival (ms). */
  readonly groups: string;
  /** Prefix of each group's members (a sorted set scored by arrival ms) and window markers. */
  readonly base: string;
  /**
   * The operator's detaches, a stream of e (the delivery's entry id) and g (its new group), so
   * that each worker's index learns of them (similar-detach.lua); written on the first detach.
   */
  readonly detaches: string;
}

export function projectKeys(prefix: string, project: string): ProjectKeys {
  // Braces inside the project id would move the hash tag; base64url has none.
  const base = `${prefix}:similar:{${toBase64Url(project)}}:`;
  return {
    docs: `${base}docs`,
    of: `${base}of`,
    groups: `${base}groups`,
    base,
    detaches: `${base}detaches`,
  };
}

/**
 * The projects that have grouping keys, a sorted set scored by their last entry (ms) and trimmed
 * past DEDUPE_TTL_SECONDS where it is written. (Before, `similar:projects` was a plain set that
 * only grew: a new name, so an older deployment's key is never read as the wrong type.)
 */
export function projectsKey(prefix: string): string {
  return `${prefix}:similar:active-projects`;
}

/** A group's members; `group` is its id within the project. */
export function groupMembersKey(keys: ProjectKeys, group: string): string {
  return `${keys.base}group:${group}`;
}

/** The prefix of a key made of a record id (keyOfRecord). */
const KEY_OF_RECORD_PREFIX = 'feedback.created:';

/** Marks a line field that is a whole key (one not made of a record id). */
const WHOLE_KEY = ':';

/**
 * Where a delivery's line is in the `of` hash, and what its group's members key holds of it: the
 * record id alone when its key is made of it (keyOfRecord; most are: 17 bytes less, twice per
 * delivery), else its key after a colon, so the two forms never meet (a record id that starts
 * with a colon takes the second). The scripts compute it too (similar-*.lua, `fieldOf`). A line
 * written before this version is under the key itself, and its members hold the key: readers
 * look there when the field has nothing.
 */
export function lineField(key: string): string {
  const rest = key.slice(KEY_OF_RECORD_PREFIX.length);
  return key.startsWith(KEY_OF_RECORD_PREFIX) && !rest.startsWith(WHOLE_KEY)
    ? rest
    : `${WHOLE_KEY}${key}`;
}

/** The delivery key of a line field (lineField). */
export function keyOfLineField(field: string): string {
  return field.startsWith(WHOLE_KEY) ? field.slice(1) : `${KEY_OF_RECORD_PREFIX}${field}`;
}

/** A group's public id: its project, base64url, a dot, and its id within the project. */
export function groupIdOf(project: string, group: string): string {
  return `${toBase64Url(project)}.${group}`;
}

/** The project and id within it that a public group id is made of; undefined for no group's. */
export function readGroupId(id: string): { project: string; group: string } | undefined {
  const parts = /^([A-Za-z0-9_-]*)\.((\d+)-(\d+)(?:\.d(?:[2-9]|[1-9]\d+)?)?)$/.exec(id);
  // An entry id of Redis's: a group of one is looked for by it (XRANGE), which refuses others.
  if (!parts || BigInt(parts[3]!) > MOST_ENTRY_PART || BigInt(parts[4]!) > MOST_ENTRY_PART) {
    return undefined;
  }
  return { project: fromBase64Url(parts[1]!), group: parts[2]! };
}

/** The entry id of a group's first delivery, of which its id within the project is made. */
export function firstEntryOf(group: string): string {
  return group.replace(/\.d\d*$/, '');
}

/** The largest of each of an entry id's two numbers (Redis streams: 64 bits, unsigned). */
const MOST_ENTRY_PART = 2n ** 64n - 1n;

function toBase64Url(text: string): string {
  return Buffer.from(text, 'utf8').toString('base64url');
}

function fromBase64Url(text: string): string {
  return Buffer.from(text, 'base64url').toString('utf8');
}
