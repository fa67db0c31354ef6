/**
 * Where grouping keeps a project's deliveries in Redis. Every key of one project shares one hash
 * tag (the project id in braces), so a script can touch them together on a cluster too. A
 * group's id says which project it is of and which delivery started it, so a reader finds it
 * from the id alone, and it is URL-safe: base64url of the project, a dot, base64url of the key.
 */

export interface ProjectKeys {
  /** The stream of entries: k (delivery key), r (record id), t (title), d (compact document). */
  readonly docs: string;
  /** Delivery key -> its stored grouping (StoredGrouping, JSON), or `pending:<entry id>`. */
  readonly of: string;
  /** The project's groups, scored by their last arrival (ms). */
  readonly groups: string;
  /** Prefix of each group's members (a sorted set scored by arrival ms) and window markers. */
  readonly base: string;
}

export function projectKeys(prefix: string, project: string): ProjectKeys {
  // Braces inside the project id would move the hash tag; base64url has none.
  const base = `${prefix}:similar:{${toBase64Url(project)}}:`;
  return { docs: `${base}docs`, of: `${base}of`, groups: `${base}groups`, base };
}

/** The set of projects that have grouping keys. */
export function projectsKey(prefix: string): string {
  return `${prefix}:similar:projects`;
}

export function groupMembersKey(keys: ProjectKeys, groupId: string): string {
  return `${keys.base}group:${groupId}`;
}

/**
 * A group's id: its project and its first delivery's key, each base64url, joined by a dot. The
 * group an operator detaches a group's first delivery into has `.d` after it.
 */
export function groupIdOf(project: string, firstKey: string): string {
  return `${toBase64Url(project)}.${toBase64Url(firstKey)}`;
}

/** The project and first key a group id is made of; undefined for an id of no group. */
export function readGroupId(id: string): { project: string; firstKey: string } | undefined {
  const parts = /^([A-Za-z0-9_-]*)\.([A-Za-z0-9_-]+)(?:\.d)?$/.exec(id);
  return parts
    ? { project: fromBase64Url(parts[1]!), firstKey: fromBase64Url(parts[2]!) }
    : undefined;
}

function toBase64Url(text: string): string {
  return Buffer.from(text, 'utf8').toString('base64url');
}

function fromBase64Url(text: string): string {
  return Buffer.from(text, 'base64url').toString('utf8');
}
