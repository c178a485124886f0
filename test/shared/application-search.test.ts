import {
  applicationSearchQuery,
  quoteLiteral,
  REFERENCE_PREFIX_PATTERN,
  STATUS_FILTER_PATTERN,
} from '../../src/shared/application-search';

const SHOP = { merchantId: 'shop-a' };
const BASE = `WorkflowType = 'financeApplicationWorkflow' AND MerchantId = 'shop-a' AND ExecutionStatus != 'ContinuedAsNew' AND ExecutionStatus != 'Failed'`;

describe('applicationSearchQuery', () => {
  it("without a filter lists the latest, not failed, run of each of the merchant's finance applications", () => {
    expect(applicationSearchQuery({}, SHOP)).toBe(BASE);
  });

  it.each([["shop' OR MerchantId != 'x"], ['a~b'], ['a:b'], [''], ['x'.repeat(65)]])(
    'refuses the merchant id %j',
    (merchantId) => {
      expect(() => applicationSearchQuery({}, { merchantId })).toThrow(RangeError);
    },
  );

  it('adds status, reference prefix and the creation window, each quoted', () => {
    const query = applicationSearchQuery(
      {
        status: 'APPROVED',
        referencePrefix: 'shop-42.',
        createdAfter: new Date('2026-11-21T10:00:00+01:00'),
        createdBefore: new Date('2026-11-22T00:00:00Z'),
      },
      SHOP,
    );
    expect(query).toBe(
      `${BASE} AND FinanceApplicationStatus = 'APPROVED' AND MerchantReference STARTS_WITH 'shop-42.'` +
        ` AND (FinanceApplicationCreatedAt >= '2026-11-21T09:00:00.000Z' OR (FinanceApplicationCreatedAt IS NULL AND StartTime >= '2026-11-21T09:00:00.000Z'))` +
        ` AND (FinanceApplicationCreatedAt < '2026-11-22T00:00:00.000Z' OR (FinanceApplicationCreatedAt IS NULL AND StartTime < '2026-11-22T00:00:00.000Z'))`,
    );
  });

  it.each([["APPROVED' OR WorkflowType != 'x"], ['APPROVED"'], ['A\\'], ['IN PROGRESS'], [''], ['x'.repeat(65)]])(
    'refuses the status %j',
    (status) => {
      expect(() => applicationSearchQuery({ status }, SHOP)).toThrow(RangeError);
    },
  );

  it.each([["ref' OR 'a'='a"], ['ref%'], ['a/b'], [''], ['x'.repeat(129)]])(
    'refuses the reference prefix %j',
    (referencePrefix) => {
      expect(() => applicationSearchQuery({ referencePrefix }, SHOP)).toThrow(RangeError);
    },
  );

  it('refuses an invalid date', () => {
    expect(() => applicationSearchQuery({ createdAfter: new Date('not a date') }, SHOP)).toThrow(RangeError);
  });

  it('patterns accept what a merchant uses', () => {
    for (const status of ['IN_PROGRESS', 'approved', 'v2.SIGNED', 'bank:REJECTED-7']) {
      expect(STATUS_FILTER_PATTERN.test(status)).toBe(true);
    }
    for (const prefix of ['shop-', 'A.b_c~d-1', 'x'.repeat(128)])
      expect(REFERENCE_PREFIX_PATTERN.test(prefix)).toBe(true);
  });
});

describe('quoteLiteral', () => {
  it('quotes plain values', () => {
    expect(quoteLiteral('APPROVED')).toBe(`'APPROVED'`);
  });
  it.each([[`a'b`], [`a"b`], ['a\\b'], ['a\nb'], ['a\u0000b']])('refuses %j rather than escaping it', (value) => {
    expect(() => quoteLiteral(value)).toThrow(RangeError);
  });
});
