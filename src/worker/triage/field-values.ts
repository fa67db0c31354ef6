/**
 * Reads a rule's field path from a record, as the list of values it names (a path through an
 * array names one value per element; a missing field names none):
 * - `rating`, `client_context.geo.country_code`: plain paths through objects;
 * - `tags[].name`: the name of every tag;
 * - `custom_fields.<name>`: the value of the custom field with that name (names may hold dots);
 * - `user_data.<key>`: that key of the free-form user data (keys may hold dots).
 */
import type { FeedbackRecord } from '../../webhooks/feedback-record.js';

export function fieldValues(record: FeedbackRecord, path: string): unknown[] {
  if (path.startsWith('custom_fields.')) {
    const name = path.slice('custom_fields.'.length);
    return (record.custom_fields ?? [])
      .filter((field) => field?.name === name)
      .map((field) => field.value);
  }
  if (path.startsWith('user_data.')) {
    const key = path.slice('user_data.'.length);
    const data = record.user_data;
    return data && Object.hasOwn(data, key) ? [data[key]] : [];
  }
  let values: unknown[] = [record];
  for (const segment of path.split('.')) {
    const each = segment.endsWith('[]');
    const name = each ? segment.slice(0, -2) : segment;
    values = values.flatMap((value) => {
      if (value === null || typeof value !== 'object' || !Object.hasOwn(value, name)) return [];
      const inner = (value as Record<string, unknown>)[name];
      return each ? (Array.isArray(inner) ? inner : []) : [inner];
    });
  }
  return values;
}
