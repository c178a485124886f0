import { execFileSync } from 'node:child_process';
import { Webhook } from 'standardwebhooks';
import { CallbackSigner, signingSecretProblem } from '../../src/security/callback-signature';
import {
  callbackSigningSecretsAt,
  deriveCallbackSigningSecret,
  derivesSecrets,
  DEVELOPMENT_SIGNING_MASTER_SECRET,
  masterSecretProblem,
  shownSigningSecrets,
} from '../../src/security/merchant-signing-secret';

const MASTER = 'test-master-of-the-callback-signing-secrets-32+chars';
const OTHER_MASTER = 'another-master-of-the-callback-signing-secrets!!';

/** Derived per-merchant callback signing secrets (docs/decisions/0045-derived-callback-signing-secrets.md). */
describe('deriveCallbackSigningSecret', () => {
  it('gives each merchant, generation and master its own Standard Webhooks secret, the same every time', () => {
    const a1 = deriveCallbackSigningSecret(MASTER, 'shop-a', 1);
    expect(deriveCallbackSigningSecret(MASTER, 'shop-a', 1)).toBe(a1);
    expect(signingSecretProblem(a1)).toBeUndefined(); // whsec_ + base64 of 32 bytes
    const others = [
      deriveCallbackSigningSecret(MASTER, 'shop-b', 1),
      deriveCallbackSigningSecret(MASTER, 'shop-a', 2),
      deriveCallbackSigningSecret(OTHER_MASTER, 'shop-a', 1),
      // The separators keep ids and generations apart: "shop-a1" + 1 is not "shop-a" + 11.
      deriveCallbackSigningSecret(MASTER, 'shop-a1', 1),
      deriveCallbackSigningSecret(MASTER, 'shop-a', 11),
    ];
    expect(new Set([a1, ...others]).size).toBe(others.length + 1);
    expect(() => deriveCallbackSigningSecret(MASTER, 'shop-a', 0)).toThrow(RangeError);
  });

  it("is the documented formula, so the operator can compute a merchant's secret with openssl", () => {
    // docs/security.md#signed-merchant-callbacks
    const fromOpenssl = execFileSync(
      'bash',
      [
        '-c',
        `printf 'paylater callback signing v1\\0%s\\0%s' shop-a 3 | openssl dgst -sha256 -hmac "$MASTER" -binary | base64`,
      ],
      { env: { ...process.env, MASTER }, encoding: 'utf8' },
    ).trim();
    expect(`whsec_${fromOpenssl}`).toBe(deriveCallbackSigningSecret(MASTER, 'shop-a', 3));
  });

  it('refuses a short master or one with spaces, never echoing it', () => {
    expect(masterSecretProblem(MASTER)).toBeUndefined();
    expect(masterSecretProblem(DEVELOPMENT_SIGNING_MASTER_SECRET)).toBeUndefined();
    for (const bad of ['short-master', `${'x'.repeat(31)}`, `${'x'.repeat(20)} ${'y'.repeat(20)}`]) {
      expect(masterSecretProblem(bad)).toBeDefined();
      expect(masterSecretProblem(bad)).not.toContain(bad);
    }
  });
});

describe('callbackSigningSecretsAt and shownSigningSecrets', () => {
  const now = Date.parse('2026-05-01T12:00:00.000Z');
  const generations = [
    { generation: 3, createdAt: '2026-05-01T11:00:00.000Z' },
    { generation: 2, createdAt: '2026-04-01T00:00:00.000Z', retiresAt: '2026-05-02T11:00:00.000Z' },
  ];
  const derived = { signingSecrets: [], signingMasters: [MASTER, OTHER_MASTER] };

  it('signs with every generation still signing, under every master; shows those of the first master', () => {
    const secrets = callbackSigningSecretsAt(derived, 'shop-a', generations, now);
    expect(secrets).toEqual([
      deriveCallbackSigningSecret(MASTER, 'shop-a', 3),
      deriveCallbackSigningSecret(MASTER, 'shop-a', 2),
      deriveCallbackSigningSecret(OTHER_MASTER, 'shop-a', 3),
      deriveCallbackSigningSecret(OTHER_MASTER, 'shop-a', 2),
    ]);
    expect(shownSigningSecrets(derived, 'shop-a', generations, now)).toEqual([
      { secret: secrets[0], generation: 3, createdAt: '2026-05-01T11:00:00.000Z', retiresAt: null },
      {
        secret: secrets[1],
        generation: 2,
        createdAt: '2026-04-01T00:00:00.000Z',
        retiresAt: '2026-05-02T11:00:00.000Z',
      },
    ]);
    // After the grace period only the newest signs.
    const later = Date.parse('2026-05-02T11:00:00.000Z');
    expect(callbackSigningSecretsAt(derived, 'shop-a', generations, later)).toEqual([secrets[0], secrets[2]]);
  });

  it('signs a callback that either secret verifies during the grace period, and only the new one after', () => {
    const headersAt = (at: number) => {
      const signer = new CallbackSigner(callbackSigningSecretsAt(derived, 'shop-a', generations, at));
      return signer.sign('msg_1', '{"type":"x"}', new Date());
    };
    const verifies = (secret: string, headers: object) => {
      try {
        new Webhook(secret).verify('{"type":"x"}', headers as Record<string, string>);
        return true;
      } catch {
        return false;
      }
    };
    const [newest, previous] = [
      deriveCallbackSigningSecret(MASTER, 'shop-a', 3),
      deriveCallbackSigningSecret(MASTER, 'shop-a', 2),
    ];
    const during = headersAt(now);
    expect([verifies(newest, during), verifies(previous, during)]).toEqual([true, true]);
    const after = headersAt(Date.parse('2026-05-03T00:00:00.000Z'));
    expect([verifies(newest, after), verifies(previous, after)]).toEqual([true, false]);
    expect(verifies(deriveCallbackSigningSecret(MASTER, 'shop-b', 3), during)).toBe(false);
  });

  it('uses explicit secrets as they are: not derived, no generation', () => {
    const explicit = { signingSecrets: ['whsec_x', 'whsec_y'], signingMasters: [MASTER] };
    expect(derivesSecrets(explicit)).toBe(false);
    expect(callbackSigningSecretsAt(explicit, 'shop-a', generations, now)).toEqual(['whsec_x', 'whsec_y']);
    expect(shownSigningSecrets(explicit, 'shop-a', generations, now).map((s) => s.generation)).toEqual([null, null]);
    expect(derivesSecrets({ signingSecrets: [], signingMasters: [] })).toBe(false);
    expect(callbackSigningSecretsAt({ signingSecrets: [] }, 'shop-a', generations, now)).toEqual([]);
  });
});
