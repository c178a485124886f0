import { inspect } from 'node:util';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import { CallbackSigner, signingSecretProblem } from '../../src/security/callback-signature';

const secret = (label: string) => `whsec_${Buffer.from(label.padEnd(32, '.')).toString('base64')}`;
const OLD = secret('old merchant callback key');
const NEW = secret('new merchant callback key');

describe('signingSecretProblem (CALLBACK_SIGNING_SECRETS entries)', () => {
  it('accepts whsec_ with padded standard base64 of 24 to 64 bytes', () => {
    expect(signingSecretProblem(OLD)).toBeUndefined();
    expect(signingSecretProblem(`whsec_${Buffer.alloc(24, 1).toString('base64')}`)).toBeUndefined();
    expect(signingSecretProblem(`whsec_${Buffer.alloc(64, 1).toString('base64')}`)).toBeUndefined();
  });

  it.each([
    [Buffer.alloc(32).toString('base64'), /start with whsec_/],
    ['whsec_not base64!', /padded standard base64/],
    [`whsec_${Buffer.alloc(32, 7).toString('base64url')}`.replace(/=+$/, ''), /padded standard base64/],
    [`whsec_${Buffer.alloc(16, 1).toString('base64')}`, /24-64 bytes \(got 16\)/],
    [`whsec_${Buffer.alloc(65, 1).toString('base64')}`, /24-64 bytes \(got 65\)/],
  ])('refuses %s', (value, problem) => {
    expect(signingSecretProblem(value)).toMatch(problem);
    expect(signingSecretProblem(value)).not.toContain(value);
  });
});

describe('CallbackSigner', () => {
  const body = JSON.stringify({ type: 'finance-application.status-changed', status: 'APPROVED', note: 'ünïcödé' });
  const at = new Date();

  it('produces headers a merchant verifies with standardwebhooks’ Webhook.verify', () => {
    const headers = new CallbackSigner([NEW]).sign('finance-application:r-1:APPROVED', body, at);
    expect(headers['webhook-id']).toBe('finance-application:r-1:APPROVED');
    expect(headers['webhook-timestamp']).toBe(String(Math.floor(at.getTime() / 1000)));
    expect(headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
    expect(new Webhook(NEW).verify(body, { ...headers })).toEqual(JSON.parse(body));
    expect(() => new Webhook(OLD).verify(body, { ...headers })).toThrow(WebhookVerificationError);
  });

  it('signs with every secret, space-separated: holders of either verify during a rotation', () => {
    const headers = new CallbackSigner([NEW, OLD]).sign('id-1', body, at);
    expect(headers['webhook-signature'].split(' ')).toHaveLength(2);
    expect(new Webhook(NEW).verify(body, { ...headers })).toEqual(JSON.parse(body));
    expect(new Webhook(OLD).verify(body, { ...headers })).toEqual(JSON.parse(body));
    expect(() => new Webhook(secret('a third key')).verify(body, { ...headers })).toThrow(WebhookVerificationError);
  });

  it('cannot sign without a secret, and never shows its keys', () => {
    const none = new CallbackSigner([]);
    expect(none.canSign).toBe(false);
    expect(() => none.sign('id', body, at)).toThrow(/no CALLBACK_SIGNING_SECRETS/);
    const signer = new CallbackSigner([NEW]);
    const raw = Buffer.from(NEW.slice('whsec_'.length), 'base64');
    for (const shown of [JSON.stringify({ signer }), inspect(signer, { depth: 5, showHidden: true })]) {
      expect(shown).not.toContain(NEW.slice('whsec_'.length));
      expect(shown).not.toContain(raw.toString('latin1'));
      expect(shown).not.toMatch(/\b\d+,\s*\d+,\s*\d+/); // no byte array dumped either
    }
  });
});
