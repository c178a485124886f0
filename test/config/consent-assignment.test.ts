import { loadConfig } from '../../src/config';
import { consentAssignmentWarning } from '../../src/api/consent-assignment';

const key = (name: string) => `${name}:${name.padEnd(24, 'k')}`;

/** CONSENT_ASSIGNMENT through loadConfig: `auto` resolved by the number of merchants in MERCHANT_API_KEYS. */
describe('CONSENT_ASSIGNMENT', () => {
  it('defaults to auto: merchants claim on the embedded stack (one generated key) and with one key', () => {
    expect(loadConfig({}).consentAssignment).toEqual({ setting: 'auto', rule: 'merchant' });
    expect(loadConfig({ MERCHANT_API_KEYS: key('shop-a') }).consentAssignment.rule).toBe('merchant');
  });

  it('leaves consents to operators by default once two merchants are configured', () => {
    const config = loadConfig({ MERCHANT_API_KEYS: `${key('shop-a')},${key('shop-b')}` });
    expect(config.consentAssignment).toEqual({ setting: 'auto', rule: 'operator' });
  });

  it('takes operator or merchant as set, and refuses anything else naming the variable', () => {
    const two = `${key('shop-a')},${key('shop-b')}`;
    expect(loadConfig({ MERCHANT_API_KEYS: two, CONSENT_ASSIGNMENT: 'merchant' }).consentAssignment.rule).toBe(
      'merchant',
    );
    expect(loadConfig({ CONSENT_ASSIGNMENT: 'operator' }).consentAssignment.rule).toBe('operator');
    expect(() => loadConfig({ CONSENT_ASSIGNMENT: 'first-claimer' })).toThrow(
      /CONSENT_ASSIGNMENT: must be one of auto, operator, merchant/,
    );
  });
});

describe('consentAssignmentWarning', () => {
  const two = `${key('shop-a')},${key('shop-b')}`;
  it('warns at start-up only when several merchants claim consents themselves', () => {
    expect(consentAssignmentWarning(loadConfig({ MERCHANT_API_KEYS: two, CONSENT_ASSIGNMENT: 'merchant' }))).toMatch(
      /^CONSENT_ASSIGNMENT=merchant with several merchants: .*0046/,
    );
    expect(consentAssignmentWarning(loadConfig({ MERCHANT_API_KEYS: two }))).toBeUndefined();
    expect(consentAssignmentWarning(loadConfig({ CONSENT_ASSIGNMENT: 'merchant' }))).toBeUndefined();
  });
});
