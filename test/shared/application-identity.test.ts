import { canonicalJson, creationDifferences } from '../../src/shared/application-identity';

describe('creationDifferences (docs/decisions/0038-reference-reuse-conflict.md)', () => {
  const stored = {
    application: { redirectUrl: 'https://s.example/r', merchantReference: 'r1', amount: { value: 1, currency: 'EUR' } },
    callbackUrl: 'https://s.example/hooks',
    settings: { deadlineMs: 60_000, fastPollIntervalMs: 30_000, terminalStatuses: ['DONE'] },
  };

  it('the same request, in another key order, is the same', () => {
    const asked = {
      application: {
        amount: { currency: 'EUR', value: 1 },
        merchantReference: 'r1',
        redirectUrl: 'https://s.example/r',
      },
      callbackUrl: 'https://s.example/hooks',
      settings: { deadlineMs: 60_000, fastPollIntervalMs: 99_000 },
    };
    expect(creationDifferences(stored, asked, ['deadlineMs'])).toEqual([]);
  });

  it('names each field that differs: bank fields, callbackUrl, and the settings the request names', () => {
    const asked = {
      application: { redirectUrl: 'https://s.example/x', merchantReference: 'r1', note: 'new' },
      settings: { deadlineMs: 120_000, fastPollIntervalMs: 30_000 },
    };
    expect(creationDifferences(stored, asked, ['deadlineMs', 'fastPollIntervalMs'])).toEqual([
      'application.amount',
      'application.note',
      'application.redirectUrl',
      'callbackUrl',
      'settings.deadlineMs',
    ]);
  });

  it('settings the request leaves to the defaults are not compared', () => {
    const asked = { ...stored, settings: { deadlineMs: 1, fastPollIntervalMs: 2 } };
    expect(creationDifferences(stored, asked, [])).toEqual([]);
  });

  it('canonical JSON sorts keys at every depth and keeps array order', () => {
    expect(canonicalJson({ b: [2, 1], a: { d: 1, c: null } })).toBe('{"a":{"c":null,"d":1},"b":[2,1]}');
  });
});
