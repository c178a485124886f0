import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { loadConfig } from '../../src/config';
import { loadSandboxConfig } from '../../src/sandbox/config';
import { DATETIME_SEARCH_ATTRIBUTE_NAMES, SEARCH_ATTRIBUTE_NAMES } from '../../src/shared/search-attributes';
import { DEV_SERVER_DYNAMIC_CONFIG } from '../../src/temporal/dev-server';

/**
 * No Docker engine runs here, so the compose file is checked statically: interpolated as compose would,
 * each app service's environment must pass the app's own config schema, and names and ports must agree.
 */
const root = join(__dirname, '..', '..');
const compose = parse(readFileSync(join(root, 'docker-compose.yml'), 'utf8'), { merge: true }) as {
  services: Record<string, Service>;
  volumes?: Record<string, unknown>;
};
interface Service {
  image?: string;
  build?: string;
  command?: string[];
  environment?: Record<string, string>;
  ports?: string[];
  depends_on?: Record<string, unknown> | string[];
  volumes?: string[];
}

/** Compose interpolation: ${VAR}, ${VAR:-default}, ${VAR:?error}. Records the variables that must be set. */
function interpolate(value: string, env: Record<string, string>, required: Set<string>): string {
  return value.replace(/\$\{([A-Z0-9_]+)(?::([-?])([^}]*))?\}/g, (_m, name: string, op?: string, arg?: string) => {
    if (op === '?') required.add(name);
    const set = env[name];
    if (set !== undefined && set !== '') return set;
    if (op === '-') return arg ?? '';
    if (op === '?') throw new Error(`compose would stop: ${name} ${arg}`);
    return '';
  });
}

function environmentOf(
  service: string,
  env: Record<string, string>,
  required = new Set<string>(),
): Record<string, string> {
  const raw = compose.services[service]?.environment ?? {};
  return Object.fromEntries(Object.entries(raw).map(([k, v]) => [k, interpolate(String(v), env, required)]));
}

const HOST_ENV = {
  WEBHOOK_HASH_SECRET: 'h'.repeat(48),
  BANK_CLIENT_SECRET: 'sandbox-secret',
  MERCHANT_API_KEYS: `shop:${'k'.repeat(32)}`,
  PAYLOAD_ENCRYPTION_KEYS: `key-1:${Buffer.alloc(32, 7).toString('base64')}`,
};
const appServices = ['worker', 'api'];
/** Each app service's process: the worker serves no HTTP (no merchant keys), the API both listeners. */
const roleOf = (service: string): 'worker' | 'api' => (service === 'worker' ? 'worker' : 'api');
const configOf = (service: string, env: Record<string, string>, required?: Set<string>) =>
  loadConfig(environmentOf(service, env, required), { role: roleOf(service) });

describe('docker-compose.yml', () => {
  it('has the production shape: Postgres, Temporal with schema set-up, the UI, worker, api, bank sandbox', () => {
    expect(Object.keys(compose.services).sort()).toEqual(
      [
        'api',
        'bank-sandbox',
        'postgres',
        'temporal',
        'temporal-init',
        'temporal-setup',
        'temporal-ui',
        'worker',
      ].sort(),
    );
    for (const name of [...appServices, 'bank-sandbox']) expect(compose.services[name]?.build).toBe('.');
    expect(compose.services.worker?.command).toEqual(['node', 'dist/worker.js']);
    expect(compose.services.api?.command).toEqual(['node', 'dist/api/server.js']);
    expect(compose.services['bank-sandbox']?.command).toEqual(['node', 'dist/sandbox/server.js']);
  });

  it('gives every app service an environment that passes the config schema, with only secrets from the host', () => {
    const required = new Set<string>();
    for (const service of appServices) {
      const config = configOf(service, HOST_ENV, required);
      expect(config.bank.embedded).toBe(false);
      expect(config.temporal.address).toBeDefined();
    }
    expect([...required].sort()).toEqual([
      'BANK_CLIENT_SECRET',
      'MERCHANT_API_KEYS',
      'PAYLOAD_ENCRYPTION_KEYS',
      'WEBHOOK_HASH_SECRET',
    ]);
    expect(() => environmentOf('worker', {})).toThrow(/compose would stop: BANK_CLIENT_SECRET/);
    // Only the API holds the merchant keys.
    expect(environmentOf('worker', HOST_ENV)).not.toHaveProperty('MERCHANT_API_KEYS');
    expect(configOf('api', HOST_ENV).merchantApiKeys).toEqual({
      keys: [{ name: 'shop', key: 'k'.repeat(32) }],
      generated: false,
    });
  });

  it('points the apps at services that exist, on the ports those services listen on', () => {
    const services = compose.services;
    for (const service of appServices) {
      const config = configOf(service, HOST_ENV);
      const [temporalHost, temporalPort] = config.temporal.address!.split(':');
      expect(services[temporalHost!]).toBeDefined();
      expect(services[temporalHost!]?.ports).toContain(`${temporalPort}:${temporalPort}`);

      const sandboxEnv = environmentOf('bank-sandbox', HOST_ENV);
      for (const url of [config.bank.baseUrl!, config.bank.authUrl!]) {
        const u = new URL(url);
        expect(services[u.hostname]).toBeDefined();
        expect(u.port).toBe(sandboxEnv.SANDBOX_PORT);
      }
      const publicUrl = new URL(config.webhooks.publicBaseUrl);
      expect(publicUrl.hostname).toBe('api');
      expect(publicUrl.port).toBe(environmentOf('api', HOST_ENV).PORT);
      expect(services.api?.ports).toContain(`${config.port}:${config.port}`);
      // The internal listener: published on the host's loopback only, and probed for readiness.
      expect(services.api?.ports).toContain(`127.0.0.1:${config.internalPort}:${config.internalPort}`);
      expect(JSON.stringify(services.api)).toContain(`http://127.0.0.1:${config.internalPort}/readyz`);
    }
    for (const [name, service] of Object.entries(services)) {
      const deps = Array.isArray(service.depends_on) ? service.depends_on : Object.keys(service.depends_on ?? {});
      for (const dep of deps)
        expect({ service: name, dependsOn: dep, exists: dep in services }).toMatchObject({ exists: true });
    }
  });

  it('configures the bank sandbox to match the apps: credentials, webhook endpoint and security header', () => {
    const sandbox = loadSandboxConfig(environmentOf('bank-sandbox', HOST_ENV));
    const app = configOf('worker', HOST_ENV);
    expect(sandbox.options.clientId).toBe(app.bank.clientId);
    expect(sandbox.options.clientSecret).toBe(app.bank.clientSecret);
    expect(sandbox.options.accountWebhook?.endpoint).toBe(`${app.webhooks.publicBaseUrl}/webhooks/accounts`);
    expect(sandbox.options.accountWebhook?.securityHeader).toBe(app.webhooks.securityHeader);
    expect(sandbox.host).toBe('0.0.0.0');
  });

  it('registers every contract search attribute and the dynamic config the embedded server uses', () => {
    const setup = readFileSync(join(root, 'deploy/temporal/setup.sh'), 'utf8');
    const loops = [...setup.matchAll(/for name in ([A-Za-z ]+); do\n.*--type (\w+)/g)].map(
      ([, names, type]) => [type, names!.split(' ').sort()] as const,
    );
    expect(Object.fromEntries(loops)).toEqual({
      Keyword: [...SEARCH_ATTRIBUTE_NAMES].sort(),
      Datetime: [...DATETIME_SEARCH_ATTRIBUTE_NAMES].sort(),
    });
    const dynamic = parse(readFileSync(join(root, 'deploy/temporal/dynamicconfig.yaml'), 'utf8')) as Record<
      string,
      { value: unknown }[]
    >;
    for (const kv of DEV_SERVER_DYNAMIC_CONFIG) {
      const [key, value] = kv.split('=');
      expect(dynamic[key!]?.[0]?.value).toBe(JSON.parse(value!));
    }
    const mounted = compose.services.temporal?.volumes?.[0]?.split(':')[1];
    expect(mounted).toBe(
      `/etc/temporal/config/${String(compose.services.temporal?.environment?.DYNAMIC_CONFIG_FILE_PATH).replace(/^config\//, '')}`,
    );
  });
});
