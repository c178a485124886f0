import { REFERENCE_PATTERN } from '../../src/shared/ids';

describe('REFERENCE_PATTERN', () => {
  it('takes references that survive as one URL path segment, and refuses dot-only ones', () => {
    for (const ok of ['order-1001', 'a.b', '...', '.x', 'A_b~c', 'x'.repeat(128)])
      expect(REFERENCE_PATTERN.test(ok)).toBe(true);
    for (const bad of ['.', '..', '', 'a/b', 'a b', 'é', 'x'.repeat(129)])
      expect(REFERENCE_PATTERN.test(bad)).toBe(false);
  });
});
