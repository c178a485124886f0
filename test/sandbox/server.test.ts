import { loadSandboxConfig, SandboxConfigError } from '../../src/sandbox/config';
import { main } from '../../src/sandbox/server';
import { token } from './helpers';

describe('standalone sandbox configuration', () => {
  test('defaults', () => {
    const config = loadSandboxConfig({});
    expect(config.port).toBe(4010);
    expect(config.options).toMatchObject({ clientId: 'sandbox-client', clientSecret: 'sandbox-secret' });
    expect(config.options.accountWebhook).toEqual({
      endpoint: undefined,
      securityHeader: undefined,
      activation: undefined,
    });
  });

  test('reads every variable', () => {
    const config = loadSandboxConfig({
      SANDBOX_PORT: '0',
      SANDBOX_CLIENT_ID: 'id',
      SANDBOX_CLIENT_SECRET: 'secret',
      SANDBOX_ACCOUNT_WEBHOOK_URL: 'http://127.0.0.1:3000/webhooks/accounts',
      SANDBOX_WEBHOOK_SECURITY_HEADER: 'abc= +/',
      SANDBOX_TOKEN_TTL_SECONDS: '60',
      SANDBOX_STEP_MS: '250',
      SANDBOX_ACTIVATION: 'immediate',
    });
    expect(config).toMatchObject({
      port: 0,
      options: {
        clientId: 'id',
        clientSecret: 'secret',
        tokenTtlSeconds: 60,
        lifecycle: { stepMs: 250 },
        accountWebhook: {
          endpoint: 'http://127.0.0.1:3000/webhooks/accounts',
          securityHeader: 'abc= +/',
          activation: 'immediate',
        },
      },
    });
  });

  test('another bank vocabulary: SANDBOX_STATUSES, the first at creation', () => {
    expect(loadSandboxConfig({ SANDBOX_STATUSES: 'RECEIVED, UNDER_REVIEW,PAID_OUT' }).options.lifecycle).toEqual({
      stepMs: undefined,
      statuses: ['RECEIVED', 'UNDER_REVIEW', 'PAID_OUT'],
    });
  });

  test.each([
    ['SANDBOX_PORT', 'abc'],
    ['SANDBOX_PORT', '70000'],
    ['SANDBOX_TOKEN_TTL_SECONDS', '0'],
    ['SANDBOX_STEP_MS', '-5'],
    ['SANDBOX_ACTIVATION', 'tomorrow'],
    ['SANDBOX_ACCOUNT_WEBHOOK_URL', 'not a url'],
    ['SANDBOX_ACCOUNT_WEBHOOK_URL', 'http://127.0.0.1/wh?x=1'],
    ['SANDBOX_WEBHOOK_SECURITY_HEADER', 'no:colons'],
    ['SANDBOX_STATUSES', ' , '],
    ['SANDBOX_STATUSES', 'RECEIVED,not a status'],
  ])('a bad %s (%s) is refused with a message naming it', (name, value) => {
    expect(() => loadSandboxConfig({ [name]: value })).toThrow(SandboxConfigError);
    expect(() => loadSandboxConfig({ [name]: value })).toThrow(name);
  });

  test('main writes the message (no stack) and starts nothing on a bad value', async () => {
    let written = '';
    const result = await main({
      env: { SANDBOX_PORT: 'x' },
      stderr: { write: (text: string) => (written += text) },
      handleSignals: false,
    });
    expect(result).toBeNull();
    expect(written).toMatch(/SANDBOX_PORT/);
    expect(written).not.toMatch(/\n\s+at /);
  });

  test('main starts a working sandbox with the configured credentials', async () => {
    const sandbox = await main({
      env: {
        SANDBOX_PORT: '0',
        SANDBOX_CLIENT_ID: 'test-client',
        SANDBOX_CLIENT_SECRET: 'test-secret',
        SANDBOX_LOG_LEVEL: 'silent',
      },
      handleSignals: false,
    });
    try {
      expect(sandbox).not.toBeNull();
      expect(await token(sandbox!.url)).toEqual(expect.any(String));
    } finally {
      await sandbox?.close();
    }
  });
});
