import { randomBytes } from 'node:crypto';
import { ConfigError, loadConfig } from '../../src/config';
import { DEVELOPMENT_PAYLOAD_KEY_ID } from '../../src/security/payload-codec';

const key32 = () => randomBytes(32).toString('base64');
const PAYLOAD_KEYS = `2026-01:${key32()},2025-07:${key32()}`;

const REAL_BANK = {
  BANK_BASE_URL: 'https://api.bank.example',
  BANK_AUTH_URL: 'https://auth.bank.example',
  BANK_CLIENT_ID: 'client',
  BANK_CLIENT_SECRET: 'secret',
  PUBLIC_BASE_URL: 'https://paylater.example/',
  WEBHOOK_HASH_SECRET: 'x'.repeat(32),
  PAYLOAD_ENCRYPTION_KEYS: PAYLOAD_KEYS,
};

function issuesOf(env: Record<string, string>): { variable: string; message: string }[] {
  try {
    loadConfig(env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).issues;
  }
  throw new Error('expected a ConfigError');
}

describe('loadConfig', () => {
  it('runs the embedded stack with nothing configured', () => {
    const config = loadConfig({});
    expect(config.temporal.address).toBeUndefined();
    expect(config.temporal.namespace).toBe('default');
    expect(config.temporal.devServer).toEqual({ port: 7233, uiPort: 8233, dataDir: 'data' });
    expect(config.bank.embedded).toBe(true);
    expect(config.port).toBe(3000);
    expect(config.webhooks.publicBaseUrl).toBe('http://localhost:3000');
    expect(config.webhooks.securityHeader).toBe('');
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
  ])('rejects %s=%s with a message naming it', (variable, value, message) => {
    const issues = issuesOf({ [variable]: value });
    const issue = issues.find((i) => i.variable === variable);
    expect(issue?.message).toMatch(message);
  });

  it('sizes the worker for many waiting workflows by default, with a bank read ceiling of 50/s', () => {
    const config = loadConfig({});
    expect(config.worker).toEqual({
      maxCachedWorkflows: 500,
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
      BANK_MAX_READS_PER_SECOND: '12.5',
    });
    expect(config.worker).toEqual({
      maxCachedWorkflows: 2_000,
      maxConcurrentWorkflowTaskExecutions: 80,
      maxConcurrentActivityTaskExecutions: 200,
      maxWorkflowTaskPollers: 20,
      maxActivityTaskPollers: 4,
    });
    expect(config.bank.maxReadsPerSecond).toBe(12.5);
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
});
