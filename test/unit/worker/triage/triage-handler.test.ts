import { describe, expect, it } from 'vitest';
import type { FeedbackRecord } from '../../../../src/webhooks/feedback-record.js';
import { parseTriageRules, type TriageRules } from '../../../../src/worker/triage/rules.js';
import { decideTriage } from '../../../../src/worker/triage/triage-handler.js';

const rules = (mode: 'first' | 'all'): TriageRules =>
  parseTriageRules(
    JSON.stringify({
      mode,
      rules: [
        { name: 'low', when: { field: 'rating', lte: 2 }, set: { priority_id: 3, status_id: 2 } },
        {
          name: 'bug',
          when: { field: 'title', matches: 'crash', ignoreCase: true },
          set: { priority_id: 4, type_id: 1 },
        },
        { name: 'never', when: { field: 'rating', gt: 100 }, set: { priority_id: 1 } },
      ],
    }),
    'test',
  );

const crash: FeedbackRecord = {
  id: 'fb_1',
  title: 'App CRASHES on save',
  rating: 1,
  priority_id: 2,
};

describe('decideTriage', () => {
  it('applies only the first matching rule by default', () => {
    expect(decideTriage(rules('first'), crash)).toEqual({
      matched: ['low'],
      patch: { priority_id: 3, status_id: 2 },
    });
  });

  it('merges every matching rule in order with mode all, later rules winning', () => {
    expect(decideTriage(rules('all'), crash)).toEqual({
      matched: ['low', 'bug'],
      patch: { priority_id: 4, status_id: 2, type_id: 1 },
    });
  });

  it('leaves out fields the record already has', () => {
    const alreadyTriaged = { ...crash, priority_id: 3 };
    expect(decideTriage(rules('first'), alreadyTriaged).patch).toEqual({ status_id: 2 });
  });

  it('sends nothing when nothing would change', () => {
    const done = { ...crash, priority_id: 3, status_id: 2 };
    expect(decideTriage(rules('first'), done)).toEqual({ matched: ['low'], patch: {} });
  });

  it('sends nothing when no rule matches', () => {
    expect(decideTriage(rules('all'), { id: 'fb_2', rating: 5 })).toEqual({
      matched: [],
      patch: {},
    });
  });

  it('compares assignee_id with the assignee the record has', () => {
    const assign = parseTriageRules(
      JSON.stringify({
        rules: [{ name: 'a', when: { field: 'id', exists: true }, set: { assignee_id: 'usr_1' } }],
      }),
      'test',
    );
    expect(decideTriage(assign, { id: 'x', assignee: { id: 'usr_1', name: 'Sam' } }).patch).toEqual(
      {},
    );
    expect(decideTriage(assign, { id: 'x', assignee: null }).patch).toEqual({
      assignee_id: 'usr_1',
    });
  });
});
