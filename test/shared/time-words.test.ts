import { humanDuration, relativePhrase, utcText } from '../../src/shared/time-words';

describe('time words', () => {
  it('says durations, instants and relative phrases as a person reads them', () => {
    expect([0, 40_000, 900_000, 3_600_000, 9_000_000, 30 * 86_400_000].map(humanDuration)).toEqual([
      '0 s',
      '40 s',
      '15 min',
      '1 h',
      '2 h 30 min',
      '30 days',
    ]);
    expect(utcText('2026-11-28T14:03:12.345Z')).toBe('2026-11-28 14:03:12 UTC');
    expect(utcText('not a time')).toBe('not a time');
    const created = '2026-11-28T14:00:00Z';
    expect(relativePhrase('2026-11-28T14:00:40Z', { at: created, what: 'it was created' })).toBe(
      '40 s after it was created',
    );
    expect(relativePhrase('2026-11-28T13:58:00Z', { at: created, what: 'the deadline' })).toBe(
      '2 min before the deadline',
    );
    expect(relativePhrase(Date.parse(created) + 40_000, { at: created })).toBe('in 40 s');
    expect(relativePhrase(Date.parse(created) - 180_000, { at: created })).toBe('3 min ago');
    expect(relativePhrase('x', { at: created })).toBeUndefined();
  });
});
