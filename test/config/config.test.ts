import { randomBytes } from 'node:crypto';
import { loadConfig } from '../../src/config';
import { DEVELOPMENT_SIGNING_MASTER_SECRET } from '../../src/security/merchant-signing-secret';
import { DEVELOPMENT_PAYLOAD_KEY_ID } from '../../src/security/payload-codec';
import { configIssuesOf as issuesOf } from '../helpers/config';

const key32 = () => randomBytes(32).toString('base64');
const PAYLOAD_KEYS = `2026-01:${key32()},2025-07:${key32()}`;

const REAL_BANK = {
  BANK_BASE_URL: 'https://api.bank.example',
  BANK_AUTH_URL: 'https://auth.bank.example',
  BANK_CLIENT_ID: 'client',
  BANK_CLIENT_SECRET: 'secret',
  PUBLIC_BASE_URL: 'https://paylater.example/',
  WEBHOOK_HASH_SECRET: 'x'.repeat(32),
  MERCHANT_API_KEYS: `shop:${'k'.repeat(24)}`,
  OPERATOR_API_KEYS: `ops:${'o'.repeat(24)}`,
  WEBHOOK_SECURITY_HEADER: 'Basic c2hvcDpob29r=',
  PAYLOAD_ENCRYPTION_KEYS: PAYLOAD_KEYS,
};

describe('loadConfig', () => {
  it('runs the embedded stack with nothing configured', () => {
    const config = loadConfig({});
    expect(config.temporal.address).toBeUndefined();
    expect(config.temporal.namespace).toBe('default');
    expect(config.temporal.devServer).toEqual({ port: 7233, uiPort: 8233, uiCodecPort: 8234, dataDir: 'data' });
    expect(config.bank.embedded).toBe(true);
    expect(config.port).toBe(3000);
    expect(config.internalPort).toBe(3001);
    expect(config.webhooks.publicBaseUrl).toBe('http://localhost:3000');
    expect(config.webhooks.securityHeader).toBe('');
    expect(config.webhooks.previousHashSecret).toBeUndefined();
  });

  it('takes a real bank configuration and trims trailing slashes from URLs', () => {
    const config = loadConfig({ ...REAL_BANK, TEMPORAL_ADDRESS: 'temporal:7233', PORT: '8080' });
    expect(config.bank).toMatchObject({ embedded: false, baseUrl: 'https://api.bank.example', clientId: 'client' });
    expect(config.webhooks.publicBaseUrl).toBe('https://paylater.example');
    expect(config.temporal.address).toBe('temporal:7233');
    expect(config.port).toBe(8080);
  });

  it('names every missing variable when a real bank is configured without its secrets', () => {
    const issues = issuesOf({ BANK_BASE_URL: 'https://api.bank.example' });
    expect(issues.map((i) => i.variable).sort()).toEqual(
      [
        'BANK_AUTH_URL',
        'BANK_CLIENT_ID',
        'BANK_CLIENT_SECRET',
        'PUBLIC_BASE_URL',
        'WEBHOOK_HASH_SECRET',
        'MERCHANT_API_KEYS',
        'OPERATOR_API_KEYS',
        'WEBHOOK_SECURITY_HEADER',
        'PAYLOAD_ENCRYPTION_KEYS',
      ].sort(),
    );
    expect(issues[0]!.message).toMatch(/required when BANK_BASE_URL is set/);
  });

  it.each([
    ['PORT', 'abc', /port/],
    ['PORT', '70000', /0-65535/],
    ['TEMPORAL_ADDRESS', 'no-port', /host:port/],
    ['BANK_BASE_URL', 'ftp://bank', /http\(s\) URL/],
    ['WEBHOOK_SECURITY_HEADER', 'Bearer abc!', /\[ a-zA-Z0-9=\+\/\]\*/],
    ['WEBHOOK_HASH_SECRET', 'short', /32 characters/],
    ['WEBHOOK_HASH_SECRET_PREVIOUS', 'short', /32 characters/],
    ['WEBHOOK_SECURITY_HEADER_WAIVED', 'yes', /true or false/],
    ['INTERNAL_PORT', 'abc', /port/],
    ['INTERNAL_PORT', '3000', /must differ from PORT \(3000\)/],
    ['WORKER_METRICS_PORT', 'abc', /port/],
    ['WORKER_METRICS_PORT', '70000', /0-65535/],
    ['WORKER_METRICS_PORT', '3001', /must differ from PORT and INTERNAL_PORT/],
    ['MERCHANT_API_KEYS', ',', /lists no key/],
    ['OPERATOR_API_KEYS', ',', /lists no key/],
    ['LOG_LEVEL', 'loud', /.+/],
    ['BANK_MAX_READS_PER_SECOND', 'fast', /number of reads per second/],
    ['BANK_MAX_READS_PER_SECOND', '0', /greater than 0/],
    ['WORKER_MAX_CACHED_WORKFLOWS', 'many', /whole number/],
    ['WORKER_MAX_CACHED_WORKFLOWS', '-1', /at least 0/],
    ['WORKER_MAX_CACHED_WORKFLOWS', '1', /0 \(no cache\) or at least 2/],
    ['WORKER_MAX_CONCURRENT_WORKFLOW_TASKS', '1', /at least 2/],
    ['WORKER_MAX_CONCURRENT_WORKFLOW_TASKS', '2.5', /whole number/],
    ['WORKER_MAX_CONCURRENT_ACTIVITIES', '0', /at least 1/],
    ['WORKER_MAX_WORKFLOW_POLLERS', '1', /at least 2/],
    ['WORKER_MAX_ACTIVITY_POLLERS', '0', /at least 1/],
    ['WORKER_MEMORY_LIMIT', 'lots', /size of at least 64Mi, as 768Mi/],
    ['WORKER_MEMORY_LIMIT', '32Mi', /at least 64Mi/],
    ['WORKER_MEMORY_LIMIT', '1 GB', /as 768Mi, 2Gi or bytes/],
    ['WORKER_TUNER', 'adaptive', /one of fixed, resource-based/],
    ['WORKER_TARGET_MEMORY_USAGE', '80%', /number between 0 and 1/],
    ['WORKER_TARGET_MEMORY_USAGE', '0', /above 0/],
    ['WORKER_TARGET_CPU_USAGE', '1.5', /at most 1/],
  ])('rejects %s=%s with a message naming it', (variable, value, message) => {
    const issues = issuesOf({ [variable]: value });
    const issue = issues.find((i) => i.variable === variable);
    expect(issue?.message).toMatch(message);
  });

  it('sizes the worker for many waiting workflows by default (the cache from its memory), reads at most 50/s', () => {
    const config = loadConfig({});
    expect(config.worker).toEqual({
      maxCachedWorkflows: undefined,
      memoryLimitBytes: undefined,
      tuner: 'fixed',
      targetMemoryUsage: 0.8,
      targetCpuUsage: 0.9,
      maxConcurrentWorkflowTaskExecutions: 40,
      maxConcurrentActivityTaskExecutions: 100,
      maxWorkflowTaskPollers: 10,
      maxActivityTaskPollers: 10,
    });
    expect(config.bank.maxReadsPerSecond).toBe(50);
  });

  it('takes the worker sizing and the bank read ceiling from the environment', () => {
    const config = loadConfig({
      WORKER_MAX_CACHED_WORKFLOWS: '2000',
      WORKER_MAX_CONCURRENT_WORKFLOW_TASKS: '80',
      WORKER_MAX_CONCURRENT_ACTIVITIES: '200',
      WORKER_MAX_WORKFLOW_POLLERS: '20',
      WORKER_MAX_ACTIVITY_POLLERS: '4',
      WORKER_MEMORY_LIMIT: '768Mi',
      WORKER_TUNER: 'resource-based',
      WORKER_TARGET_MEMORY_USAGE: '0.7',
      WORKER_TARGET_CPU_USAGE: '0.75',
      BANK_MAX_READS_PER_SECOND: '12.5',
    });
    expect(config.worker).toEqual({
      maxCachedWorkflows: 2_000,
      memoryLimitBytes: 768 * 2 ** 20,
      tuner: 'resource-based',
      targetMemoryUsage: 0.7,
      targetCpuUsage: 0.75,
      maxConcurrentWorkflowTaskExecutions: 80,
      maxConcurrentActivityTaskExecutions: 200,
      maxWorkflowTaskPollers: 20,
      maxActivityTaskPollers: 4,
    });
    expect(config.bank.maxReadsPerSecond).toBe(12.5);
  });

  describe('shutdown (SHUTDOWN_DRAIN_DELAY, SHUTDOWN_GRACE_PERIOD, WORKER_SHUTDOWN_GRACE_TIME)', () => {
    it('drains `npm run api` for 5 s behind its load balancer, `npm start` not at all; 10 s of grace for both', () => {
      expect(loadConfig({}, { role: 'api' }).shutdown).toEqual({
        drainDelayMs: 5_000,
        gracePeriodMs: 10_000,
        workerGraceMs: 10_000,
      });
      expect(loadConfig({}).shutdown.drainDelayMs).toBe(0);
      expect(loadConfig({}, { role: 'worker' }).shutdown.workerGraceMs).toBe(10_000);
    });

    it('takes durations from the environment, whatever the role', () => {
      const env = { SHUTDOWN_DRAIN_DELAY: '15s', SHUTDOWN_GRACE_PERIOD: '1m', WORKER_SHUTDOWN_GRACE_TIME: '500ms' };
      for (const role of ['all', 'api', 'worker'] as const)
        expect(loadConfig(env, { role }).shutdown).toEqual({
          drainDelayMs: 15_000,
          gracePeriodMs: 60_000,
          workerGraceMs: 500,
        });
      expect(loadConfig({ SHUTDOWN_DRAIN_DELAY: '0' }, { role: 'api' }).shutdown.drainDelayMs).toBe(0);
    });

    it('stops start-up on a value that is no duration or out of bounds, naming the variable', () => {
      expect(
        issuesOf({ SHUTDOWN_DRAIN_DELAY: 'soon', SHUTDOWN_GRACE_PERIOD: '-1s', WORKER_SHUTDOWN_GRACE_TIME: '2h' }),
      ).toEqual([
        { variable: 'SHUTDOWN_DRAIN_DELAY', message: 'must be a duration such as 500ms, 30s, 5m, 1h or 30d' },
        { variable: 'SHUTDOWN_GRACE_PERIOD', message: 'must be a duration such as 500ms, 30s, 5m, 1h or 30d' },
        { variable: 'WORKER_SHUTDOWN_GRACE_TIME', message: 'must be between 0ms and 10m' },
      ]);
    });
  });

  describe('failed authentications (FAILED_AUTHENTICATIONS_PER_15_MINUTES)', () => {
    const per15Minutes = (env: Record<string, string>) => loadConfig(env).failedAuthentications.per15Minutes;

    it('allows 10 wrong keys per client address in 15 minutes by default, the variable otherwise', () => {
      expect(loadConfig({}).failedAuthentications).toEqual({ per15Minutes: 10 });
      expect(per15Minutes({ FAILED_AUTHENTICATIONS_PER_15_MINUTES: '25' })).toBe(25);
      expect(per15Minutes({ FAILED_AUTHENTICATIONS_PER_15_MINUTES: ' ' })).toBe(10);
    });

    it('still reads its former name, CONSOLE_SIGN_IN_ATTEMPTS_PER_15_MINUTES, when it is unset', () => {
      expect(per15Minutes({ CONSOLE_SIGN_IN_ATTEMPTS_PER_15_MINUTES: '25' })).toBe(25);
      expect(
        per15Minutes({ FAILED_AUTHENTICATIONS_PER_15_MINUTES: '3', CONSOLE_SIGN_IN_ATTEMPTS_PER_15_MINUTES: '25' }),
      ).toBe(3);
    });

    it('holds the console sessions per merchant (CONSOLE_SESSIONS_PER_MERCHANT)', () => {
      expect(loadConfig({}).console).toEqual({ sessionsPerMerchant: 50 });
    });

    it('holds 50 sessions per merchant by default, the variable otherwise (CONSOLE_SESSIONS_PER_MERCHANT)', () => {
      expect(loadConfig({ CONSOLE_SESSIONS_PER_MERCHANT: '3' }).console.sessionsPerMerchant).toBe(3);
      expect(issuesOf({ CONSOLE_SESSIONS_PER_MERCHANT: '0' })).toEqual([
        { variable: 'CONSOLE_SESSIONS_PER_MERCHANT', message: 'must be at least 1' },
      ]);
    });

    it('stops start-up on a value that is not a whole number of at least 1, naming the variable', () => {
      expect(issuesOf({ FAILED_AUTHENTICATIONS_PER_15_MINUTES: '0' })).toEqual([
        { variable: 'FAILED_AUTHENTICATIONS_PER_15_MINUTES', message: 'must be at least 1' },
      ]);
      expect(issuesOf({ FAILED_AUTHENTICATIONS_PER_15_MINUTES: 'ten' })).toEqual([
        { variable: 'FAILED_AUTHENTICATIONS_PER_15_MINUTES', message: 'must be a whole number' },
      ]);
      expect(issuesOf({ CONSOLE_SIGN_IN_ATTEMPTS_PER_15_MINUTES: '2.5' })).toEqual([
        { variable: 'CONSOLE_SIGN_IN_ATTEMPTS_PER_15_MINUTES', message: 'must be a whole number' },
      ]);
    });
  });

  it('keeps the default pollers within fewer slots, as the SDK does, and allows a disabled cache', () => {
    const config = loadConfig({
      WORKER_MAX_CACHED_WORKFLOWS: '0',
      WORKER_MAX_CONCURRENT_WORKFLOW_TASKS: '4',
      WORKER_MAX_CONCURRENT_ACTIVITIES: '3',
    });
    expect(config.worker).toMatchObject({
      maxCachedWorkflows: 0,
      maxWorkflowTaskPollers: 4,
      maxActivityTaskPollers: 3,
    });
  });

  it.each([
    [
      { WORKER_MAX_CACHED_WORKFLOWS: '10', WORKER_MAX_CONCURRENT_WORKFLOW_TASKS: '20' },
      'WORKER_MAX_CONCURRENT_WORKFLOW_TASKS',
      /must not exceed WORKER_MAX_CACHED_WORKFLOWS \(10\)/,
    ],
    [
      { WORKER_MAX_CONCURRENT_WORKFLOW_TASKS: '8', WORKER_MAX_WORKFLOW_POLLERS: '9' },
      'WORKER_MAX_WORKFLOW_POLLERS',
      /must not exceed WORKER_MAX_CONCURRENT_WORKFLOW_TASKS \(8\)/,
    ],
    [
      { WORKER_MAX_ACTIVITY_POLLERS: '101' },
      'WORKER_MAX_ACTIVITY_POLLERS',
      /must not exceed WORKER_MAX_CONCURRENT_ACTIVITIES \(100\)/,
    ],
  ])('rejects worker sizes that contradict each other (%j)', (env, variable, message) => {
    const issue = issuesOf(env).find((i) => i.variable === variable);
    expect(issue?.message).toMatch(message);
  });

  it('accepts a security header made of the allowed characters, spaces included', () => {
    expect(loadConfig({ WEBHOOK_SECURITY_HEADER: 'Basic dXNlcjpwYXNz=' }).webhooks.securityHeader).toBe(
      'Basic dXNlcjpwYXNz=',
    );
  });

  describe('listeners and merchant API keys', () => {
    it('takes both ports', () => {
      expect(loadConfig({ PORT: '8080', INTERNAL_PORT: '8081' })).toMatchObject({ port: 8080, internalPort: 8081 });
    });

    it('serves the worker metrics on 9464 by default, WORKER_METRICS_PORT otherwise (0: a free port)', () => {
      expect(loadConfig({}).workerMetricsPort).toBe(9464);
      expect(loadConfig({ WORKER_METRICS_PORT: '9100' }).workerMetricsPort).toBe(9100);
      expect(loadConfig({ WORKER_METRICS_PORT: '0' }).workerMetricsPort).toBe(0);
      // A worker process alone binds neither PORT nor INTERNAL_PORT.
      expect(loadConfig({ WORKER_METRICS_PORT: '3000' }, { role: 'worker' }).workerMetricsPort).toBe(3000);
    });

    it('generates a development key on the embedded stack when MERCHANT_API_KEYS is unset, a new one each run', () => {
      const a = loadConfig({}).merchantApiKeys;
      expect(a.generated).toBe(true);
      expect(a.keys).toEqual([{ name: 'dev', key: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/) }]);
      expect(loadConfig({}).merchantApiKeys.keys[0]!.key).not.toBe(a.keys[0]!.key);
    });

    it('takes name:key pairs, trimmed, and honours them on the embedded stack too', () => {
      const keys = ` shop-eu : ${'a'.repeat(24)} ,shop.us:${'b'.repeat(40)},`;
      expect(loadConfig({ MERCHANT_API_KEYS: keys }).merchantApiKeys).toEqual({
        generated: false,
        keys: [
          { name: 'shop-eu', key: 'a'.repeat(24) },
          { name: 'shop.us', key: 'b'.repeat(40) },
        ],
      });
    });

    it.each([
      ['a key shorter than 24 characters', `shop:${'s'.repeat(23)}`, /entry 1 \("shop"\): the key must be at least 24/],
      ['an entry that is not name:key', `${'s'.repeat(30)}`, /entry 1 is not name:key/],
      ['a name used twice', `shop:${'a'.repeat(24)},shop:${'b'.repeat(24)}`, /entry 2: the name "shop" is used twice/],
      ['a key used twice', `a:${'a'.repeat(24)},b:${'a'.repeat(24)}`, /entry 2 \("b"\) has the same key as "a"/],
      ['a name with other characters', `shop eu:${'a'.repeat(24)}`, /entry 1: the name must be/],
      [
        'a key with a space or a quote',
        `shop:${'a'.repeat(24)} "x"`,
        /entry 1 \("shop"\): the key must be at most 512 visible ASCII/,
      ],
    ])('refuses %s, naming MERCHANT_API_KEYS and never echoing a key', (_case, value, message) => {
      const issues = issuesOf({ MERCHANT_API_KEYS: value });
      const issue = issues.find((i) => i.variable === 'MERCHANT_API_KEYS');
      expect(issue?.message).toMatch(message);
      let text = '';
      try {
        loadConfig({ MERCHANT_API_KEYS: value });
      } catch (err) {
        text = (err as Error).message;
      }
      expect(text).toContain('MERCHANT_API_KEYS');
      for (const secret of value.split(',').map((e) => e.slice(e.indexOf(':') + 1).trim()))
        if (secret.length >= 8) expect(text).not.toContain(secret);
    });

    it('generates a development operator key on the embedded stack when OPERATOR_API_KEYS is unset, apart from the merchant one', () => {
      const config = loadConfig({});
      expect(config.operatorApiKeys).toEqual({
        generated: true,
        keys: [{ name: 'operator', key: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/) }],
      });
      expect(config.operatorApiKeys.keys[0]!.key).not.toBe(config.merchantApiKeys.keys[0]!.key);
      expect(loadConfig({}).operatorApiKeys.keys[0]!.key).not.toBe(config.operatorApiKeys.keys[0]!.key);
      // Either list may be chosen without the other.
      const chosen = loadConfig({ OPERATOR_API_KEYS: `ops:${'o'.repeat(24)}` });
      expect(chosen.operatorApiKeys).toEqual({ generated: false, keys: [{ name: 'ops', key: 'o'.repeat(24) }] });
      expect(chosen.merchantApiKeys.generated).toBe(true);
    });

    it('takes operator name:key pairs, trimmed, and refuses them as it refuses merchant keys, naming OPERATOR_API_KEYS', () => {
      expect(
        loadConfig({ OPERATOR_API_KEYS: ` alice : ${'a'.repeat(24)} ,bob:${'b'.repeat(30)}` }).operatorApiKeys,
      ).toEqual({
        generated: false,
        keys: [
          { name: 'alice', key: 'a'.repeat(24) },
          { name: 'bob', key: 'b'.repeat(30) },
        ],
      });
      const cases: [string, RegExp][] = [
        [`alice:${'s'.repeat(23)}`, /entry 1 \("alice"\): the key must be at least 24/],
        [`${'s'.repeat(30)}`, /entry 1 is not name:key/],
        [
          `a:${'a'.repeat(24)},b:${'a'.repeat(24)}`,
          /entry 2 \("b"\) has the same key as "a": each operator needs its own key/,
        ],
      ];
      for (const [value, message] of cases) {
        const issue = issuesOf({ OPERATOR_API_KEYS: value }).find((i) => i.variable === 'OPERATOR_API_KEYS');
        expect(issue?.message).toMatch(message);
        expect(issue?.message).not.toContain('s'.repeat(23));
        expect(issue?.message).not.toContain('a'.repeat(24));
      }
    });

    it('refuses a key that is both a merchant key and an operator key, naming both entries and never the key', () => {
      const shared = 'shared-key-'.padEnd(40, 'x');
      const env = {
        MERCHANT_API_KEYS: `shop-a:${'a'.repeat(24)},shop-b:${shared}`,
        OPERATOR_API_KEYS: `alice:${'o'.repeat(24)},bob:${shared}`,
      };
      const issues = issuesOf(env);
      expect(issues).toEqual([
        {
          variable: 'OPERATOR_API_KEYS',
          message: expect.stringMatching(/"bob" has the same key as MERCHANT_API_KEYS's "shop-b"/),
        },
      ]);
      let text = '';
      try {
        loadConfig(env);
      } catch (err) {
        text = (err as Error).message;
      }
      expect(text).toContain('OPERATOR_API_KEYS');
      expect(text).not.toContain(shared);
      // With a real bank too.
      expect(issuesOf({ ...REAL_BANK, OPERATOR_API_KEYS: `ops:${'k'.repeat(24)}` }).map((i) => i.variable)).toEqual([
        'OPERATOR_API_KEYS',
      ]);
    });

    it('requires operator keys with a real bank for the listeners, not for a worker', () => {
      const { OPERATOR_API_KEYS: _keys, ...withoutKeys } = REAL_BANK;
      for (const role of ['all', 'api'] as const) {
        const issues = issuesOf(withoutKeys, role);
        expect(issues).toEqual([{ variable: 'OPERATOR_API_KEYS', message: 'is required when BANK_BASE_URL is set' }]);
      }
      expect(loadConfig(withoutKeys, { role: 'worker' }).bank.embedded).toBe(false);
      expect(loadConfig(REAL_BANK).operatorApiKeys).toEqual({
        generated: false,
        keys: [{ name: 'ops', key: 'o'.repeat(24) }],
      });
    });

    it('requires keys with a real bank for the listeners, not for a worker (which serves no HTTP)', () => {
      const { MERCHANT_API_KEYS: _keys, ...withoutKeys } = REAL_BANK;
      expect(issuesOf(withoutKeys).map((i) => i.variable)).toEqual(['MERCHANT_API_KEYS']);
      expect(issuesOf(withoutKeys, 'api').map((i) => i.variable)).toEqual(['MERCHANT_API_KEYS']);
      expect(loadConfig(withoutKeys, { role: 'worker' }).bank.embedded).toBe(false);
      expect(loadConfig(REAL_BANK).merchantApiKeys).toEqual({
        generated: false,
        keys: [{ name: 'shop', key: 'k'.repeat(24) }],
      });
    });
  });

  describe('webhook secrets', () => {
    it('keeps the previous hash secret for verification after a rotation', () => {
      const config = loadConfig({ ...REAL_BANK, WEBHOOK_HASH_SECRET_PREVIOUS: 'p'.repeat(32) });
      expect(config.webhooks).toMatchObject({ hashSecret: 'x'.repeat(32), previousHashSecret: 'p'.repeat(32) });
    });

    it('refuses a previous secret equal to the current one', () => {
      const issue = issuesOf({ ...REAL_BANK, WEBHOOK_HASH_SECRET_PREVIOUS: 'x'.repeat(32) }).find(
        (i) => i.variable === 'WEBHOOK_HASH_SECRET_PREVIOUS',
      );
      expect(issue?.message).toMatch(/must differ from WEBHOOK_HASH_SECRET/);
      expect(issue?.message).not.toContain('x'.repeat(32));
    });

    it('requires the security header with a real bank, naming both variables, unless explicitly waived', () => {
      const { WEBHOOK_SECURITY_HEADER: _header, ...withoutHeader } = REAL_BANK;
      const issues = issuesOf(withoutHeader);
      expect(issues.map((i) => i.variable)).toEqual(['WEBHOOK_SECURITY_HEADER']);
      expect(issues[0]!.message).toMatch(/required when BANK_BASE_URL is set.*WEBHOOK_SECURITY_HEADER_WAIVED=true/);
      expect(issuesOf({ ...withoutHeader, WEBHOOK_SECURITY_HEADER: '   ' })[0]!.variable).toBe(
        'WEBHOOK_SECURITY_HEADER',
      );
      const waived = loadConfig({ ...withoutHeader, WEBHOOK_SECURITY_HEADER_WAIVED: 'true' });
      expect(waived.webhooks.securityHeader).toBe('');
      // A worker does not check account webhooks.
      expect(loadConfig(withoutHeader, { role: 'worker' }).webhooks.securityHeader).toBe('');
      // The embedded stack needs neither.
      expect(loadConfig({}).webhooks.securityHeader).toBe('');
    });

    it('refuses a security header shorter than 16 characters with a real bank, naming the variable, never the value', () => {
      for (const header of ['x', 'Basic abc=', 'a'.repeat(15), `  ${'b'.repeat(15)}  `]) {
        const issues = issuesOf({ ...REAL_BANK, WEBHOOK_SECURITY_HEADER: header });
        expect(issues.map((i) => i.variable)).toEqual(['WEBHOOK_SECURITY_HEADER']);
        expect(issues[0]!.message).toMatch(/at least 16 characters when BANK_BASE_URL is set/);
        expect(issues[0]!.message).not.toContain(header.trim());
      }
      expect(loadConfig({ ...REAL_BANK, WEBHOOK_SECURITY_HEADER: 'a'.repeat(16) }).webhooks.securityHeader).toBe(
        'a'.repeat(16),
      );
      // The embedded stack and a worker (which checks no account webhook) start with a short one.
      expect(loadConfig({ WEBHOOK_SECURITY_HEADER: 'short' }).webhooks.securityHeader).toBe('short');
      expect(loadConfig({ ...REAL_BANK, WEBHOOK_SECURITY_HEADER: 'short' }, { role: 'worker' })).toBeDefined();
      // The waiver still allows none at all.
      const { WEBHOOK_SECURITY_HEADER: _header, ...withoutHeader } = REAL_BANK;
      expect(loadConfig({ ...withoutHeader, WEBHOOK_SECURITY_HEADER_WAIVED: 'true' }).webhooks.securityHeader).toBe('');
    });

    it('refuses a waiver while a header is set (one of them is a mistake)', () => {
      const issue = issuesOf({ ...REAL_BANK, WEBHOOK_SECURITY_HEADER_WAIVED: 'true' }).find(
        (i) => i.variable === 'WEBHOOK_SECURITY_HEADER_WAIVED',
      );
      expect(issue?.message).toMatch(/must not be true while WEBHOOK_SECURITY_HEADER is set/);
      expect(loadConfig({ ...REAL_BANK, WEBHOOK_SECURITY_HEADER_WAIVED: 'false' }).webhooks.securityHeader).toBe(
        REAL_BANK.WEBHOOK_SECURITY_HEADER,
      );
    });
  });

  describe('payload encryption (PAYLOAD_ENCRYPTION_KEYS) and the codec endpoint (CODEC_CORS_ORIGINS)', () => {
    it('uses the public development key in the embedded default, and says so in the config', () => {
      const config = loadConfig({});
      expect(config.payloadEncryption.developmentKey).toBe(true);
      expect(config.payloadEncryption.keys.map((k) => k.id)).toEqual([DEVELOPMENT_PAYLOAD_KEY_ID]);
      expect(config.codec.corsOrigins).toEqual(['http://localhost:8233', 'http://127.0.0.1:8233']);
      expect(loadConfig({ TEMPORAL_UI_PORT: '9233' }).codec.corsOrigins).toEqual([
        'http://localhost:9233',
        'http://127.0.0.1:9233',
      ]);
    });

    it('writes under merchant keys only once MERCHANT_KEY_STORE names a store (the typed client reads with the master keys)', () => {
      expect(loadConfig({}).merchantKeys.encrypt).toBe(false);
      expect(loadConfig(REAL_BANK).merchantKeys.encrypt).toBe(false);
      expect(loadConfig({ MERCHANT_KEY_STORE: 'file:data/keys/merchant-keys.json' }).merchantKeys.encrypt).toBe(true);
      expect(loadConfig({ MERCHANT_KEY_ENCRYPTION: 'on' }).merchantKeys.encrypt).toBe(true);
      expect(
        loadConfig({ MERCHANT_KEY_STORE: 'file:keys.json', MERCHANT_KEY_ENCRYPTION: 'decrypt-only' }).merchantKeys
          .encrypt,
      ).toBe(false);
    });

    it('takes the configured keys in order (the first encrypts), in the embedded default too', () => {
      for (const env of [REAL_BANK, { PAYLOAD_ENCRYPTION_KEYS: PAYLOAD_KEYS }]) {
        const config = loadConfig(env);
        expect(config.payloadEncryption.developmentKey).toBe(false);
        expect(config.payloadEncryption.keys.map((k) => k.id)).toEqual(['2026-01', '2025-07']);
        expect(config.payloadEncryption.keys.every((k) => k.key.length === 32)).toBe(true);
      }
    });

    it('requires keys with a real bank, naming the variable', () => {
      const { PAYLOAD_ENCRYPTION_KEYS: _unset, ...withoutKeys } = REAL_BANK;
      expect(issuesOf(withoutKeys)).toEqual([
        { variable: 'PAYLOAD_ENCRYPTION_KEYS', message: 'is required when BANK_BASE_URL is set' },
      ]);
    });

    it.each([
      ['not-a-list', /entry 1 must be keyId:<base64 of 32 bytes>/],
      [`short:${randomBytes(24).toString('base64')}`, /key "short" must be 32 bytes after base64 decoding \(got 24\)/],
      [`same:${key32()},same:${key32()}`, /key id "same" is listed twice/],
      [`k1:${key32()},k2:***`, /key "k2" is not base64/],
    ])('rejects PAYLOAD_ENCRYPTION_KEYS=%j with a message naming the variable and never the key', (value, message) => {
      const issues = issuesOf({ PAYLOAD_ENCRYPTION_KEYS: value });
      expect(issues).toHaveLength(1);
      expect(issues[0]!.variable).toBe('PAYLOAD_ENCRYPTION_KEYS');
      expect(issues[0]!.message).toMatch(message);
      for (const part of value.split(/[,:]/).filter((p) => p.length >= 16))
        expect(issues[0]!.message).not.toContain(part);
    });

    it('takes the Web UI origins for the codec endpoint, and rejects anything that is not an origin', () => {
      expect(
        loadConfig({ CODEC_CORS_ORIGINS: 'https://temporal-ui.internal.example, http://localhost:8080' }).codec
          .corsOrigins,
      ).toEqual(['https://temporal-ui.internal.example', 'http://localhost:8080']);
      for (const bad of ['https://ui.example/', 'https://ui.example/path', 'ui.example', '*', 'ftp://ui.example']) {
        const issues = issuesOf({ CODEC_CORS_ORIGINS: bad });
        expect(issues.map((i) => i.variable)).toEqual(['CODEC_CORS_ORIGINS']);
        expect(issues[0]!.message).toMatch(/is not an origin/);
      }
    });
  });

  it('formats the error for a person: one line per variable, no stack needed', () => {
    try {
      loadConfig({ PORT: 'x', TEMPORAL_ADDRESS: 'bad' });
    } catch (err) {
      expect((err as Error).message).toMatch(/^Invalid configuration:\n {2}- PORT: .+\n {2}- TEMPORAL_ADDRESS: .+/);
    }
    expect.assertions(1);
  });

  describe('merchant callbacks (CALLBACK_ALLOWED_ORIGINS, CALLBACK_SIGNING_SECRETS, CALLBACK_SIGNING_MASTER_SECRETS)', () => {
    const OLD = `whsec_${Buffer.alloc(32, 1).toString('base64')}`;
    const NEW = `whsec_${Buffer.alloc(32, 2).toString('base64')}`;

    it("embedded default: loopback origins allowed, each merchant's secret derived from the development master (and says so)", () => {
      expect(loadConfig({}).callbacks).toEqual({
        allowList: { origins: [], loopback: true },
        builtInAllowList: true,
        signingSecrets: [],
        signingMasters: [DEVELOPMENT_SIGNING_MASTER_SECRET],
        developmentSecret: true,
        payloadVersion: '2026-11-25',
        retryWindowMs: 3 * 24 * 3_600_000,
      });
    });

    it('real bank default: nothing allowed, no secret needed (no callback can be sent)', () => {
      expect(loadConfig(REAL_BANK).callbacks).toEqual({
        allowList: { origins: [], loopback: false },
        builtInAllowList: true,
        signingSecrets: [],
        signingMasters: [],
        developmentSecret: false,
        payloadVersion: '2026-11-25',
        retryWindowMs: 3 * 24 * 3_600_000,
      });
    });

    it('takes the origins (normalised) and every secret in order; a list replaces the embedded loopback default', () => {
      const config = loadConfig({
        ...REAL_BANK,
        CALLBACK_ALLOWED_ORIGINS: 'https://Shop.example/, https://hooks.shop.example:8443',
        CALLBACK_SIGNING_SECRETS: ` ${NEW} , ${OLD} `,
        TRANSACTIONS_CALLBACK_URL: 'https://hooks.shop.example:8443/tx',
      });
      expect(config.callbacks).toEqual({
        allowList: { origins: ['https://shop.example', 'https://hooks.shop.example:8443'], loopback: false },
        builtInAllowList: false,
        signingSecrets: [NEW, OLD],
        signingMasters: [],
        developmentSecret: false,
        payloadVersion: '2026-11-25',
        retryWindowMs: 3 * 24 * 3_600_000,
      });
      expect(loadConfig({ CALLBACK_ALLOWED_ORIGINS: 'https://shop.example' }).callbacks.allowList).toEqual({
        origins: ['https://shop.example'],
        loopback: false,
      });
    });

    it('requires a master (or, for one merchant, a secret) with a real bank once callbacks are configured', () => {
      for (const env of [
        { CALLBACK_ALLOWED_ORIGINS: 'https://shop.example' } as Record<string, string>,
        { CALLBACK_ALLOWED_ORIGINS: 'https://shop.example', TRANSACTIONS_CALLBACK_URL: 'https://shop.example/tx' },
      ]) {
        const issue = issuesOf({ ...REAL_BANK, ...env }).find((i) => i.variable === 'CALLBACK_SIGNING_MASTER_SECRETS');
        expect(issue?.message).toMatch(/required when BANK_BASE_URL is set and callbacks are configured/);
        const master = { CALLBACK_SIGNING_MASTER_SECRETS: 'm'.repeat(32) };
        expect(loadConfig({ ...REAL_BANK, ...env, ...master }).merchants.resolve('shop').callbacks).toMatchObject({
          signingSecrets: [],
          signingMasters: ['m'.repeat(32)],
        });
      }
    });

    it('refuses CALLBACK_SIGNING_SECRETS beside CALLBACK_SIGNING_MASTER_SECRETS, and a short master, never echoing either', () => {
      const master = 'a-master-of-at-least-32-characters!!';
      const both = issuesOf({ CALLBACK_SIGNING_SECRETS: NEW, CALLBACK_SIGNING_MASTER_SECRETS: master });
      expect(both).toEqual([
        {
          variable: 'CALLBACK_SIGNING_SECRETS',
          message: expect.stringMatching(/cannot be set beside CALLBACK_SIGNING_MASTER_SECRETS/),
        },
      ]);
      const short = issuesOf({ CALLBACK_SIGNING_MASTER_SECRETS: `${master},too-short-master` });
      expect(short).toEqual([
        {
          variable: 'CALLBACK_SIGNING_MASTER_SECRETS',
          message: expect.stringMatching(/^master 2 of 2: each master must be at least 32 characters/),
        },
      ]);
      expect(JSON.stringify([...both, ...short])).not.toMatch(/too-short-master|a-master-of|whsec_/);
    });

    it('refuses a TRANSACTIONS_CALLBACK_URL outside the allow-list at start-up, naming the origin and the variable', () => {
      const issue = issuesOf({
        CALLBACK_ALLOWED_ORIGINS: 'https://shop.example',
        TRANSACTIONS_CALLBACK_URL: 'https://other.example/tx?token=t',
      }).find((i) => i.variable === 'TRANSACTIONS_CALLBACK_URL');
      expect(issue?.message).toBe(
        'callback origin https://other.example is not in CALLBACK_ALLOWED_ORIGINS (add https://other.example to CALLBACK_ALLOWED_ORIGINS)',
      );
      // A real bank allows no loopback by default; the embedded stack does.
      expect(
        issuesOf({ ...REAL_BANK, TRANSACTIONS_CALLBACK_URL: 'http://127.0.0.1:9000/tx' }).map((i) => i.variable),
      ).toContain('TRANSACTIONS_CALLBACK_URL');
      expect(loadConfig({ TRANSACTIONS_CALLBACK_URL: 'http://127.0.0.1:9000/tx' }).transactionsCallbackUrl).toBe(
        'http://127.0.0.1:9000/tx',
      );
    });

    it.each([
      ['CALLBACK_ALLOWED_ORIGINS', 'https://shop.example/hooks', /no path, query or fragment/],
      ['CALLBACK_ALLOWED_ORIGINS', 'shop.example', /not an origin/],
      ['CALLBACK_ALLOWED_ORIGINS', 'https://u:p@shop.example', /no credentials/],
      [
        'CALLBACK_SIGNING_SECRETS',
        'plain-secret-value-0123456789abcdef',
        /secret 1 of 1: each secret must start with whsec_/,
      ],
      ['CALLBACK_SIGNING_SECRETS', `${'whsec_'}${Buffer.alloc(8).toString('base64')}`, /24-64 bytes/],
      ['CALLBACK_SIGNING_SECRETS', ',', /at least one whsec_ secret/],
    ])('rejects %s=%s with a message naming it and never the secret', (variable, value, message) => {
      const issues = issuesOf({ [variable]: value });
      const issue = issues.find((i) => i.variable === variable);
      expect(issue?.message).toMatch(message);
      if (variable === 'CALLBACK_SIGNING_SECRETS' && value.length > 8)
        expect(JSON.stringify(issues)).not.toContain(value.slice(6, 20));
    });

    it('names the bad secret by position only', () => {
      const issues = issuesOf({ CALLBACK_SIGNING_SECRETS: `${NEW},whsec_c2hvcnQ=` });
      expect(issues).toEqual([
        {
          variable: 'CALLBACK_SIGNING_SECRETS',
          message: 'secret 2 of 2: each secret must decode to 24-64 bytes (got 5)',
        },
      ]);
    });
  });
});
