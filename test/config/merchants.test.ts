import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  buildMerchantDirectory,
  DEFAULT_MERCHANT_LIMITS,
  merchantsOnLegacyPayload,
  type MerchantDefaults,
} from '../../src/config/merchants';
import { ConfigError, loadConfig, merchantsOnDevelopmentSecret } from '../../src/config';

const keys = [
  { name: 'shop-a', key: 'shop-a-key-0123456789abcdefghij' },
  { name: 'shop-b', key: 'shop-b-key-0123456789abcdefghij' },
];
const secret = (label: string) => `whsec_${Buffer.from(label.padEnd(32, '.')).toString('base64')}`;
const defaults: MerchantDefaults = {
  allowList: { origins: ['https://global.example'], loopback: false },
  signingSecrets: [secret('global')],
  payloadVersion: '2026-11-25',
  transactionsCallbackUrl: 'https://global.example/tx',
  limits: DEFAULT_MERCHANT_LIMITS,
};

describe('the merchant directory (MERCHANTS_FILE over the globals)', () => {
  it('gives each merchant its own settings, and the globals to those the file leaves out', () => {
    const { directory, problems } = buildMerchantDirectory({
      keys,
      fileJson: {
        merchants: {
          'shop-a': {
            callbackSigningSecrets: [secret('a-new'), secret('a-old')],
            callbackAllowedOrigins: ['https://hooks.shop-a.example/'],
            transactionsCallbackUrl: 'https://hooks.shop-a.example/tx',
            requestsPerMinute: 60,
            maxLongPolls: 3,
            minPollInterval: '10s',
            creationsPerMinute: 20,
            refreshesPerMinute: 5,
            maxConsents: 40,
            maxOpenApplications: 50,
            maxLivePages: 4,
            callbackResendsPerMinute: 30,
            callbackRetryWindow: '12h',
            callbackPayloadVersion: 'legacy',
          },
        },
      },
      defaults,
    });
    expect(problems).toEqual([]);
    const a = directory!.get('shop-a')!;
    expect(a.callbacks.allowList).toEqual({
      origins: ['https://hooks.shop-a.example'],
      loopback: false,
      // Refusals name the list that applied (src/security/callback-url.ts).
      source: { variable: 'MERCHANTS_FILE', name: 'MERCHANTS_FILE callbackAllowedOrigins of merchant "shop-a"' },
    });
    expect(a.callbacks.signingSecrets).toEqual([secret('a-new'), secret('a-old')]);
    expect(a.callbacks.payloadVersion).toBe('legacy');
    expect(a.callbacks.retryWindowMs).toBe(12 * 3_600_000);
    expect(merchantsOnLegacyPayload(directory!)).toEqual(['shop-a']); // named by the workers at start-up
    expect(a.transactionsCallbackUrl).toBe('https://hooks.shop-a.example/tx');
    expect(a.limits).toEqual({
      requestsPerMinute: 60,
      maxLongPolls: 3,
      minPollIntervalMs: 10_000,
      creationsPerMinute: 20,
      refreshesPerMinute: 5,
      maxConsents: 40,
      maxOpenApplications: 50,
      maxLivePages: 4,
      callbackResendsPerMinute: 30,
    });
    const b = directory!.get('shop-b')!;
    expect(b.callbacks).toEqual({
      allowList: defaults.allowList,
      signingSecrets: defaults.signingSecrets,
      payloadVersion: defaults.payloadVersion,
      retryWindowMs: 3 * 24 * 3_600_000, // CALLBACK_RETRY_WINDOW's default
    });
    expect(b.transactionsCallbackUrl).toBe(defaults.transactionsCallbackUrl);
    expect(b.limits).toEqual(DEFAULT_MERCHANT_LIMITS);
    // A merchant this process does not list is served with the globals (a worker without MERCHANT_API_KEYS).
    expect(directory!.resolve('shop-z').callbacks.allowList).toBe(defaults.allowList);
  });

  it('names the merchant and the field of each problem, never a secret', () => {
    const leaked = 'whsec_not-base64-but-secret!';
    const { directory, problems } = buildMerchantDirectory({
      keys,
      fileJson: {
        merchants: {
          'shop-a': { callbackSigningSecrets: [leaked], callbackAllowedOrigins: ['https://x.example/path'] },
          'shop-b': { requestsPerMinute: 0, minPollInterval: '10 parsecs', colour: 'blue' },
          'shop-c': { callbackPayloadVersion: '2025-01-01' },
        },
      },
      defaults,
    });
    expect(directory).toBeUndefined();
    const messages = problems.map((p) => `${p.variable}: ${p.message}`);
    expect(messages).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^MERCHANTS_FILE: merchant "shop-a", callbackSigningSecrets\[0\]: /),
        expect.stringMatching(/^MERCHANTS_FILE: merchant "shop-a", callbackAllowedOrigins\[0\]: /),
        expect.stringMatching(/^MERCHANTS_FILE: merchant "shop-b", requestsPerMinute: /),
        expect.stringMatching(/^MERCHANTS_FILE: merchant "shop-b", minPollInterval: /),
        expect.stringMatching(/^MERCHANTS_FILE: merchant "shop-b".*colour/),
        'MERCHANTS_FILE: merchant "shop-c", callbackPayloadVersion: must be one of 2026-11-25, legacy',
      ]),
    );
    for (const m of messages) expect(m).not.toContain('secret!');
  });

  it('refuses a merchant without a key and a transactions URL outside its allow-list', () => {
    const { problems } = buildMerchantDirectory({
      keys,
      fileJson: {
        merchants: {
          'shop-c': {},
          'shop-a': {
            callbackAllowedOrigins: ['https://a.example'],
            transactionsCallbackUrl: 'https://elsewhere.example/tx',
          },
        },
      },
      defaults,
    });
    expect(problems.map((p) => p.message)).toEqual(
      expect.arrayContaining([
        expect.stringContaining('merchant "shop-c" has no key in MERCHANT_API_KEYS'),
        'merchant "shop-a", transactionsCallbackUrl: callback origin https://elsewhere.example is not in ' +
          'MERCHANTS_FILE callbackAllowedOrigins of merchant "shop-a"',
      ]),
    );
  });

  it('stops start-up naming MERCHANTS_FILE for a file that cannot be read or is not JSON (its text never echoed)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'merchants-'));
    const bad = join(dir, 'merchants.json');
    writeFileSync(bad, '{ "merchants": { "shop-a": { "callbackSigningSecrets": ["whsec_TOPSECRET"] ');
    const env = { MERCHANT_API_KEYS: keys.map((k) => `${k.name}:${k.key}`).join(',') };
    for (const [file, expected] of [
      [join(dir, 'missing.json'), /cannot read .*missing\.json \(ENOENT\)/],
      [bad, /is not valid JSON/],
    ] as const) {
      let error: unknown;
      try {
        loadConfig({ ...env, MERCHANTS_FILE: file });
      } catch (err) {
        error = err;
      }
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).issues).toEqual([
        { variable: 'MERCHANTS_FILE', message: expect.stringMatching(expected) },
      ]);
      expect((error as Error).message).not.toContain('TOPSECRET');
    }
  });

  it('names the merchants on the development master: those without callbackSigningSecrets of their own, on the embedded stack with neither CALLBACK_SIGNING_MASTER_SECRETS nor CALLBACK_SIGNING_SECRETS set', () => {
    const dir = mkdtempSync(join(tmpdir(), 'merchants-'));
    const fileWith = (merchants: Record<string, object>) => {
      const file = join(dir, `merchants-${Object.keys(merchants).join('-') || 'none'}.json`);
      writeFileSync(file, JSON.stringify({ merchants }));
      return file;
    };
    const MERCHANT_API_KEYS = keys.map((k) => `${k.name}:${k.key}`).join(',');
    const own = (id: string) => ({ callbackSigningSecrets: [secret(`own ${id}`)] });
    const both = fileWith({ 'shop-a': own('a'), 'shop-b': own('b') });
    // Every merchant has its own: no warning, no banner line.
    expect(merchantsOnDevelopmentSecret(loadConfig({ MERCHANT_API_KEYS, MERCHANTS_FILE: both }))).toEqual([]);
    // One falls back: only it is named.
    const onlyA = fileWith({ 'shop-a': own('a') });
    expect(merchantsOnDevelopmentSecret(loadConfig({ MERCHANT_API_KEYS, MERCHANTS_FILE: onlyA }))).toEqual(['shop-b']);
    expect(merchantsOnDevelopmentSecret(loadConfig({ MERCHANT_API_KEYS }))).toEqual(['shop-a', 'shop-b']);
    // Nothing configured: the development key's merchant.
    expect(merchantsOnDevelopmentSecret(loadConfig({}))).toEqual(['dev']);
    // CALLBACK_SIGNING_SECRETS (one merchant) or a master set: nobody is on the development master.
    const oneKey = `${keys[0]!.name}:${keys[0]!.key}`;
    expect(
      merchantsOnDevelopmentSecret(
        loadConfig({ MERCHANT_API_KEYS: oneKey, CALLBACK_SIGNING_SECRETS: secret('global') }),
      ),
    ).toEqual([]);
    expect(
      merchantsOnDevelopmentSecret(loadConfig({ MERCHANT_API_KEYS, CALLBACK_SIGNING_MASTER_SECRETS: 'm'.repeat(32) })),
    ).toEqual([]);
  });

  it('loads several merchants in any order with no owner named, and refuses the removed legacyMerchant', () => {
    const forward = keys.map((k) => `${k.name}:${k.key}`).join(',');
    const reversed = [...keys]
      .reverse()
      .map((k) => `${k.name}:${k.key}`)
      .join(',');
    for (const MERCHANT_API_KEYS of [forward, reversed])
      expect(loadConfig({ MERCHANT_API_KEYS }).merchants.ids().sort()).toEqual(['shop-a', 'shop-b']);
    // Removed with the pre-tenancy merchant (docs/decisions/0050-the-bridge-release.md): a file naming it is refused.
    const dir = mkdtempSync(join(tmpdir(), 'merchants-'));
    const named = join(dir, 'named.json');
    writeFileSync(named, JSON.stringify({ legacyMerchant: 'shop-b', merchants: {} }));
    expect(() => loadConfig({ MERCHANT_API_KEYS: forward, MERCHANTS_FILE: named })).toThrow(/legacyMerchant/);
  });

  it('loads the file through loadConfig', () => {
    const dir = mkdtempSync(join(tmpdir(), 'merchants-'));
    const file = join(dir, 'merchants.json');
    writeFileSync(file, JSON.stringify({ merchants: { 'shop-b': { maxLongPolls: 7, maxConsents: 9 } } }));
    const config = loadConfig({
      MERCHANT_API_KEYS: keys.map((k) => `${k.name}:${k.key}`).join(','),
      MERCHANTS_FILE: file,
      MERCHANT_REQUESTS_PER_MINUTE: '120',
      MERCHANT_MAX_CONSENTS: '30',
      MERCHANT_CREATIONS_PER_MINUTE: '12',
    });
    expect(config.merchants.get('shop-b')!.limits).toMatchObject({
      maxLongPolls: 7,
      requestsPerMinute: 120,
      maxConsents: 9,
      creationsPerMinute: 12,
    });
    expect(config.merchants.get('shop-a')!.limits).toMatchObject({ requestsPerMinute: 120, maxConsents: 30 });
    // The budgets no variable sets: their defaults (docs/merchant-api.md, "Budgets").
    expect(config.merchants.get('shop-a')!.limits).toMatchObject({
      refreshesPerMinute: 120,
      maxOpenApplications: 100_000,
      maxLivePages: 50,
    });
    // CALLBACK_PAYLOAD_VERSION: the current version unless set; a merchant's entry wins over it.
    expect(config.callbacks.payloadVersion).toBe('2026-11-25');
    expect(config.merchants.get('shop-a')!.callbacks.payloadVersion).toBe('2026-11-25');
    const onLegacy = loadConfig({
      MERCHANT_API_KEYS: keys.map((k) => `${k.name}:${k.key}`).join(','),
      MERCHANTS_FILE: file,
      CALLBACK_PAYLOAD_VERSION: 'legacy',
    });
    expect(onLegacy.merchants.get('shop-a')!.callbacks.payloadVersion).toBe('legacy');
    expect(() => loadConfig({ CALLBACK_PAYLOAD_VERSION: 'v2' })).toThrow(
      /CALLBACK_PAYLOAD_VERSION: must be one of 2026-11-25, legacy/,
    );
  });
});

/**
 * Nothing one merchant could use against another is shared (docs/decisions/0045-derived-callback-signing-secrets.md):
 * before it, MERCHANT_API_KEYS alone gave every merchant the one CALLBACK_SIGNING_SECRETS (or the development secret),
 * the one allow-list and the one TRANSACTIONS_CALLBACK_URL, and nothing warned.
 */
describe('several merchants share no secret, allow-list or transactions URL', () => {
  const MERCHANT_API_KEYS = keys.map((k) => `${k.name}:${k.key}`).join(',');
  const ONE_KEY = `${keys[0]!.name}:${keys[0]!.key}`;
  const MASTER = 'a-master-of-the-callback-signing-secrets-0123456789';
  const dir = mkdtempSync(join(tmpdir(), 'merchants-shared-'));
  let n = 0;
  const fileWith = (merchants: Record<string, object>) => {
    const file = join(dir, `merchants-${n++}.json`);
    writeFileSync(file, JSON.stringify({ merchants }));
    return file;
  };
  const issuesOf = (env: Record<string, string>) => {
    try {
      loadConfig(env);
    } catch (err) {
      if (err instanceof ConfigError) return err.issues;
      throw err;
    }
    throw new Error('expected a ConfigError');
  };

  it('gives two merchants with MERCHANT_API_KEYS alone each its own derived secret and no shared allow-list', () => {
    const config = loadConfig({ MERCHANT_API_KEYS });
    const [a, b] = [config.merchants.get('shop-a')!, config.merchants.get('shop-b')!];
    expect(a.callbacks.signingSecrets).toEqual([]);
    expect(a.callbacks.signingMasters).toEqual(b.callbacks.signingMasters);
    expect(a.callbacks.signingMasters).toHaveLength(1);
    // The embedded loopback default (any port) would let shop-b's callbacks reach shop-a's local receiver.
    expect(a.callbacks.allowList).toMatchObject({ origins: [], loopback: false });
    expect(b.callbacks.allowList.source?.name).toBe('MERCHANTS_FILE callbackAllowedOrigins of merchant "shop-b"');
    // One merchant keeps the embedded default.
    expect(loadConfig({ MERCHANT_API_KEYS: ONE_KEY }).merchants.get('shop-a')!.callbacks.allowList).toEqual({
      origins: [],
      loopback: true,
    });
    // With a master: derived from it; a merchant a worker does not list too (it cannot count the merchants).
    const worker = loadConfig({ CALLBACK_SIGNING_MASTER_SECRETS: MASTER }, { role: 'worker' });
    expect(worker.merchants.resolve('shop-z').callbacks).toMatchObject({
      signingSecrets: [],
      signingMasters: [MASTER],
    });
  });

  it.each([
    ['CALLBACK_SIGNING_SECRETS', { CALLBACK_SIGNING_SECRETS: secret('global') }, 'the signing secret'],
    ['CALLBACK_ALLOWED_ORIGINS', { CALLBACK_ALLOWED_ORIGINS: 'https://hooks.example' }, 'the allow-list'],
    [
      'TRANSACTIONS_CALLBACK_URL',
      { TRANSACTIONS_CALLBACK_URL: 'http://127.0.0.1:9000/tx' },
      'the transactions callback',
    ],
  ])('refuses %s for two merchants, naming it and them, never the value', (variable, env, what) => {
    const issues = issuesOf({ MERCHANT_API_KEYS, ...env });
    expect(issues).toEqual([
      {
        variable,
        message: expect.stringContaining(
          `would be ${what} of 2 merchants (shop-a, shop-b): one merchant could then act as another`,
        ),
      },
    ]);
    expect(JSON.stringify(issues)).not.toContain(Object.values(env)[0]!.slice(6, 30));
    // The same for one merchant: its own.
    expect(() => loadConfig({ MERCHANT_API_KEYS: ONE_KEY, ...env })).not.toThrow();
    // Or when only one of two merchants falls back to it.
    const field = {
      CALLBACK_SIGNING_SECRETS: 'callbackSigningSecrets',
      CALLBACK_ALLOWED_ORIGINS: 'callbackAllowedOrigins',
      TRANSACTIONS_CALLBACK_URL: 'transactionsCallbackUrl',
    }[variable]!;
    const own = {
      callbackSigningSecrets: { callbackSigningSecrets: [secret('own b')] },
      callbackAllowedOrigins: { callbackAllowedOrigins: ['https://hooks.shop-b.example'] },
      transactionsCallbackUrl: {
        callbackAllowedOrigins: ['https://b.example'],
        transactionsCallbackUrl: 'https://b.example/tx',
      },
    }[field]!;
    expect(() => loadConfig({ MERCHANT_API_KEYS, ...env, MERCHANTS_FILE: fileWith({ 'shop-b': own }) })).not.toThrow();
  });

  it('refuses a secret, an origin or a transactions URL that MERCHANTS_FILE gives two merchants, naming merchant and field', () => {
    const shared = secret('shared by two');
    const issues = issuesOf({
      MERCHANT_API_KEYS,
      CALLBACK_SIGNING_MASTER_SECRETS: MASTER,
      MERCHANTS_FILE: fileWith({
        'shop-a': {
          callbackSigningSecrets: [shared],
          callbackAllowedOrigins: ['https://hooks.shared.example'],
          transactionsCallbackUrl: 'https://hooks.shared.example/tx',
        },
        'shop-b': {
          callbackSigningSecrets: [secret('b own'), shared],
          callbackAllowedOrigins: ['https://hooks.shop-b.example', 'https://hooks.shared.example/'],
          transactionsCallbackUrl: 'https://hooks.shared.example/tx',
        },
      }),
    });
    expect(issues).toEqual([
      {
        variable: 'MERCHANTS_FILE',
        message:
          'merchant "shop-b", callbackSigningSecrets[1]: the same secret as merchant "shop-a"\'s; each needs its own',
      },
      {
        variable: 'MERCHANTS_FILE',
        message:
          'merchant "shop-b", callbackAllowedOrigins[1]: https://hooks.shared.example is also in merchant "shop-a"\'s list; ' +
          "an origin receives one merchant's callbacks",
      },
      {
        variable: 'MERCHANTS_FILE',
        message: 'merchant "shop-b", transactionsCallbackUrl: also merchant "shop-a"\'s; each needs its own',
      },
    ]);
    expect(JSON.stringify(issues)).not.toContain(shared.slice(6));
  });
});
