import { generationsOf, signingGenerations } from '../../src/shared/merchant-secrets';

/** Which generations of a merchant's secret sign (src/shared/merchant-secrets.ts). */
describe('signingGenerations', () => {
  const now = Date.parse('2026-05-01T12:00:00.000Z');

  it('keeps the newest and any generation whose grace period has not ended, newest first', () => {
    const generations = [
      { generation: 2, retiresAt: '2026-05-01T12:00:01.000Z' },
      { generation: 3, createdAt: '2026-05-01T11:00:00.000Z' },
    ];
    expect(signingGenerations(generations, now).map((g) => g.generation)).toEqual([3, 2]);
    expect(signingGenerations(generations, now + 1_000).map((g) => g.generation)).toEqual([3]);
  });

  it('always keeps the newest, even one marked retired (clocks apart)', () => {
    expect(signingGenerations([{ generation: 4, retiresAt: '2020-01-01T00:00:00.000Z' }], now)).toEqual([
      { generation: 4, retiresAt: '2020-01-01T00:00:00.000Z' },
    ]);
  });
});

describe('generationsOf (the workflow memo)', () => {
  it('is generation 1 without a memo, or with one that holds nothing usable', () => {
    for (const memo of [undefined, null, {}, { generations: [] }, { generations: [{ generation: 'x' }] }])
      expect(generationsOf(memo)).toEqual([{ generation: 1 }]);
    expect(generationsOf({ merchantId: 'm', generations: [{ generation: 2, createdAt: 't' }] })).toEqual([
      { generation: 2, createdAt: 't' },
    ]);
  });
});
