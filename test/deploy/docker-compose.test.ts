import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { loadConfig } from '../../src/config';
import { loadSandboxConfig } from '../../src/sandbox/config';
import { DATETIME_SEARCH_ATTRIBUTE_NAMES, SEARCH_ATTRIBUTE_NAMES } from '../../src/shared/search-attributes';
import { DEV_SERVER_DYNAMIC_CONFIG } from '../../src/temporal/dev-server';
import { interpolate, renderCompose, type ComposeService } from '../helpers/compose';
import { findPromtool } from '../helpers/prometheus';

/**
 * No Docker engine runs here, so the compose file is rendered as compose would (test/helpers/compose.ts: anchors,
 * merge keys, interpolation) and checked statically: every image tag is one that exists (the list below, each with
 * where it was confirmed), each app service's environment passes the app's own config schema, names and ports agree,
 * and the Prometheus configuration passes promtool.
 */
const root = join(__dirname, '..', '..');
const composePath = join(root, 'docker-compose.yml');

const HOST_ENV = {
  WEBHOOK_HASH_SECRET: 'h'.repeat(48),
  BANK_CLIENT_SECRET: 'sandbox-secret',
  MERCHANT_API_KEYS: `shop:${'k'.repeat(32)}`,
  OPERATOR_API_KEYS: `ops:${'o'.repeat(32)}`,
  PAYLOAD_ENCRYPTION_KEYS: `key-1:${Buffer.alloc(32, 7).toString('base64')}`,
};
const rendered = renderCompose(composePath, HOST_ENV);
const { services } = rendered.compose;

/** The Temporal Server version: compose's server and admin-tools, the dev server of the tests, the cluster test. */
const TEMPORAL_SERVER_VERSION = '1.32.0';

/**
 * Image tags known to exist, and where each was confirmed. A tag not in this list fails the test: confirm it (the
 * image's published tags, or the upstream project that uses it) and add it here with the source.
 */
const KNOWN_IMAGES: Record<string, string> = {
  // Docker official image, major-version tag; the version temporalio/samples-server's compose/.env pins
  // (POSTGRESQL_VERSION=16), as did temporalio/docker-compose's .env since "Bump to pg 16 (#222)".
  'postgres:16':
    'temporalio/samples-server compose/.env (POSTGRESQL_VERSION=16); Docker official image postgres, tag 16',
  // Since 1.30 the images are published from temporalio/temporal (.github/workflows/release-docker-images.yml
  // tags `<version>` and its prefixes); the 1.29-era admin-tools tags were `1.29` and `1.29.1-tctl-…-cli-…`.
  'temporalio/server:1.32.0':
    'temporalio/samples-server PR #159 (2026-09-12): "now live on Docker Hub as temporalio/server:1.32.0"',
  'temporalio/admin-tools:1.32.0':
    'temporalio/samples-server PR #159 (2026-09-12): "… and temporalio/admin-tools:1.32.0"',
  // The UI the dev server of the tests embeds (`temporal --version`: "1.9.1 (Server 1.32.0, UI 2.54.1)").
  'temporalio/ui:2.54.1':
    'temporalio/samples-server PR #159: TEMPORAL_UI_VERSION=2.54.1, "matching the UI server embedded in CLI v1.9.0"',
  // prom/prometheus tags are `v<release>` (e.g. prom/prometheus:v2.37.0 in samples-server's multirole compose);
  // 2.55.1 is the promtool release pinned in temporal-toolchain.json.
  'prom/prometheus:v2.55.1': 'Prometheus release v2.55.1; prom/prometheus publishes v<release> tags',
  // Docker official image node: <major>-<debian>-slim; Node 24 is the current LTS.
  'node:24-bookworm-slim': 'Docker official image node, tag 24-bookworm-slim (Node 24 LTS on Debian 12)',
};

const appServices = ['worker', 'api'];
/** Each app service's process: the worker serves no HTTP (no merchant keys), the API both listeners. */
const roleOf = (service: string): 'worker' | 'api' => (service === 'worker' ? 'worker' : 'api');
const environmentOf = (service: string): Record<string, string> => services[service]?.environment ?? {};
const configOf = (service: string) => loadConfig(environmentOf(service), { role: roleOf(service) });
const dependsOn = (s: ComposeService): string[] =>
  Array.isArray(s.depends_on) ? s.depends_on : Object.keys(s.depends_on ?? {});
/** One-shot jobs: they run to completion once (schema set-up, namespace and search attributes). */
const ONE_SHOT = ['temporal-setup', 'temporal-init'];

const promtool = findPromtool();
const withPromtool = promtool || process.env.CI ? it : it.skip;

describe('compose rendering (test/helpers/compose.ts)', () => {
  it('interpolates as compose does', () => {
    const env = { SET: 'x', EMPTY: '' };
    expect(interpolate('${SET} $SET ${UNSET} $$SET', env)).toBe('x x  $SET');
    expect(interpolate('${EMPTY:-d} ${EMPTY-d} ${UNSET-d} ${UNSET:-${SET}}', env)).toBe('d  d x');
    expect(interpolate('${SET:+alt} ${EMPTY:+alt} ${EMPTY+alt}', env)).toBe('alt  alt');
    expect(() => interpolate('${EMPTY:?must be set}', env)).toThrow(/EMPTY is missing a value: must be set/);
    expect(interpolate('${EMPTY?must be set}', env)).toBe('');
  });
});

describe('docker-compose.yml', () => {
  it('has the production shape: Postgres, Temporal with schema set-up, the UI, worker, api, bank sandbox, Prometheus', () => {
    expect(Object.keys(services).sort()).toEqual(
      [
        'api',
        'bank-sandbox',
        'postgres',
        'prometheus',
        'temporal',
        'temporal-init',
        'temporal-setup',
        'temporal-ui',
        'worker',
      ].sort(),
    );
    for (const name of [...appServices, 'bank-sandbox']) expect(services[name]?.build).toBe('.');
    // Production commands: the build output, never a compile at start.
    expect(services.worker?.command).toEqual(['node', 'dist/worker.js']);
    expect(services.api?.command).toEqual(['node', 'dist/api/server.js']);
    expect(services['bank-sandbox']?.command).toEqual(['node', 'dist/sandbox/server.js']);
  });

  it('uses only image tags known to exist, one Temporal version throughout', () => {
    const images = Object.entries(services)
      .filter(([, s]) => s.image)
      .map(([name, s]) => ({ service: name, image: s.image!, known: s.image! in KNOWN_IMAGES }));
    for (const image of images) expect(image).toMatchObject({ known: true });
    // The Dockerfile's base images too.
    const dockerfile = readFileSync(join(root, 'Dockerfile'), 'utf8');
    const bases = [...dockerfile.matchAll(/^FROM\s+(\S+)/gm)].map((m) => m[1]!);
    expect(bases.length).toBeGreaterThan(0);
    for (const base of bases) expect({ base, known: base in KNOWN_IMAGES }).toEqual({ base, known: true });
    expect(bases.every((b) => b.startsWith('node:24-'))).toBe(true);

    const temporalTags = images
      .filter((i) => /^temporalio\/(server|admin-tools):/.test(i.image))
      .map((i) => i.image.split(':')[1]);
    expect(temporalTags.length).toBe(3); // temporal, temporal-setup, temporal-init
    expect(new Set(temporalTags)).toEqual(new Set([TEMPORAL_SERVER_VERSION]));
  });

  it("pins the same Temporal Server as the tests' dev server", () => {
    const toolchain = JSON.parse(readFileSync(join(root, 'temporal-toolchain.json'), 'utf8')) as {
      cli: { version: string };
    };
    // Temporal CLI 1.9.1 is Server 1.32.0 (its `--version`); a CLI bump must revisit the compose versions.
    expect(toolchain.cli.version).toBe('1.9.1');
    const cli = join(root, '.temporal', 'bin', 'temporal');
    if (existsSync(cli)) {
      const version = spawnSync(cli, ['--version'], { encoding: 'utf8' }).stdout;
      expect(version).toContain(`Server ${TEMPORAL_SERVER_VERSION}`);
      expect(version).toContain(`UI ${services['temporal-ui']!.image!.split(':')[1]}`);
    }
  });

  it('restarts every long-running service, and never the one-shot set-up jobs', () => {
    for (const [name, service] of Object.entries(services)) {
      if (ONE_SHOT.includes(name)) expect({ name, restart: service.restart }).toEqual({ name, restart: 'no' });
      else expect({ name, restart: service.restart }).toEqual({ name, restart: 'unless-stopped' });
    }
    // And what depends on a one-shot job waits for it to succeed.
    for (const [name, service] of Object.entries(services)) {
      const deps = Array.isArray(service.depends_on) ? {} : (service.depends_on ?? {});
      for (const job of ONE_SHOT)
        if (job in deps)
          expect({ name, job, condition: deps[job]?.condition }).toEqual({
            name,
            job,
            condition: 'service_completed_successfully',
          });
    }
  });

  it('gives every app service an environment that passes the config schema, with only secrets from the host', () => {
    for (const service of appServices) {
      const config = configOf(service);
      expect(config.bank.embedded).toBe(false);
      expect(config.temporal.address).toBeDefined();
      expect(config.temporal.namespace).toBe('default');
    }
    expect([...rendered.required].sort()).toEqual([
      'BANK_CLIENT_SECRET',
      'MERCHANT_API_KEYS',
      'OPERATOR_API_KEYS',
      'PAYLOAD_ENCRYPTION_KEYS',
      'WEBHOOK_HASH_SECRET',
    ]);
    expect(() => renderCompose(composePath, {})).toThrow(/BANK_CLIENT_SECRET|WEBHOOK_HASH_SECRET/);
    // Only the API holds the merchant and operator keys.
    expect(environmentOf('worker')).not.toHaveProperty('MERCHANT_API_KEYS');
    expect(environmentOf('worker')).not.toHaveProperty('OPERATOR_API_KEYS');
    expect(configOf('api').merchantApiKeys).toEqual({
      keys: [{ name: 'shop', key: 'k'.repeat(32) }],
      generated: false,
    });
    expect(configOf('api').operatorApiKeys).toEqual({ keys: [{ name: 'ops', key: 'o'.repeat(32) }], generated: false });
  });

  it('points the apps at services that exist, on the ports those services listen on', () => {
    for (const service of appServices) {
      const config = configOf(service);
      const [temporalHost, temporalPort] = config.temporal.address!.split(':');
      expect(services[temporalHost!]).toBeDefined();
      expect(services[temporalHost!]?.ports).toContain(`${temporalPort}:${temporalPort}`);

      const sandboxEnv = environmentOf('bank-sandbox');
      for (const url of [config.bank.baseUrl!, config.bank.authUrl!]) {
        const u = new URL(url);
        expect(services[u.hostname]).toBeDefined();
        expect(u.port).toBe(sandboxEnv.SANDBOX_PORT);
      }
      const publicUrl = new URL(config.webhooks.publicBaseUrl);
      expect(publicUrl.hostname).toBe('api');
      expect(publicUrl.port).toBe(environmentOf('api').PORT);
      expect(services.api?.ports).toContain(`${config.port}:${config.port}`);
      // The internal listener: published on the host's loopback only, and probed for readiness.
      expect(services.api?.ports).toContain(`127.0.0.1:${config.internalPort}:${config.internalPort}`);
      expect(JSON.stringify(services.api?.healthcheck)).toContain(`http://127.0.0.1:${config.internalPort}/readyz`);
    }
    // Each worker replica's metrics and health port: exposed to the network (not published), and probed.
    const worker = configOf('worker');
    expect(services.worker?.expose).toContain(String(worker.workerMetricsPort));
    expect(JSON.stringify(services.worker?.healthcheck)).toContain(
      `http://127.0.0.1:${worker.workerMetricsPort}/readyz`,
    );
    for (const [name, service] of Object.entries(services))
      for (const dep of dependsOn(service))
        expect({ service: name, dependsOn: dep, exists: dep in services }).toMatchObject({ exists: true });
  });

  it('configures the bank sandbox to match the apps: credentials, webhook endpoint and security header', () => {
    const sandbox = loadSandboxConfig(environmentOf('bank-sandbox'));
    const app = configOf('worker');
    expect(sandbox.options.clientId).toBe(app.bank.clientId);
    expect(sandbox.options.clientSecret).toBe(app.bank.clientSecret);
    expect(sandbox.options.accountWebhook?.endpoint).toBe(`${app.webhooks.publicBaseUrl}/webhooks/accounts`);
    expect(sandbox.options.accountWebhook?.securityHeader).toBe(app.webhooks.securityHeader);
    expect(sandbox.host).toBe('0.0.0.0');
  });

  it('registers every contract search attribute', () => {
    const setup = readFileSync(join(root, 'deploy/temporal/setup.sh'), 'utf8');
    const registered = /^SEARCH_ATTRIBUTES="([A-Za-z: ]+)"$/m.exec(setup)?.[1]?.split(' ') ?? [];
    const byType = (type: string) =>
      registered
        .filter((entry) => entry.endsWith(`:${type}`))
        .map((entry) => entry.split(':')[0])
        .sort();
    expect(byType('Keyword')).toEqual([...SEARCH_ATTRIBUTE_NAMES].sort());
    expect(byType('Datetime')).toEqual([...DATETIME_SEARCH_ATTRIBUTE_NAMES].sort());
  });

  it('mounts a production dynamic config: what the merchant start needs, nothing development-only', () => {
    const dynamic = parse(readFileSync(join(root, 'deploy/temporal/dynamicconfig.yaml'), 'utf8')) as Record<
      string,
      { value: unknown; constraints?: unknown }[]
    >;
    // Development-only keys (temporalio/samples-server's development-sql.yaml marks this one "Dev setup only").
    for (const devOnly of ['system.forceSearchAttributesCacheRefreshOnRead'])
      expect(Object.keys(dynamic)).not.toContain(devOnly);
    // Update-with-start needs updates; pinned on (Server 1.32's default) so an override cannot turn them off.
    expect(dynamic['frontend.enableUpdateWorkflowExecution']?.[0]?.value).toBe(true);
    expect(dynamic['frontend.enableUpdateWorkflowExecutionAsyncAccepted']?.[0]?.value).toBe(true);
    // Each merchant's share of the bank reads: task-queue fairness on the new matcher.
    expect(dynamic['matching.useNewMatcher']?.[0]?.value).toBe(true);
    expect(dynamic['matching.enableFairness']?.[0]?.value).toBe(true);
    // What the compose server sets, the embedded dev server sets alike.
    for (const kv of DEV_SERVER_DYNAMIC_CONFIG) {
      const [key, value] = kv.split('=');
      if (key! in dynamic) expect(dynamic[key!]?.[0]?.value).toBe(JSON.parse(value!));
    }
    const temporal = services.temporal!;
    const path = temporal.environment?.DYNAMIC_CONFIG_FILE_PATH;
    expect(temporal.volumes).toContain(`./deploy/temporal/dynamicconfig.yaml:${path}:ro`);
  });

  describe('Prometheus', () => {
    const prometheus = services.prometheus!;
    const configArg = (prometheus.command as string[]).find((a) => a.startsWith('--config.file='))!;
    const [hostDir, containerDir] = prometheus.volumes!.find((v) => v.startsWith('./deploy/prometheus:'))!.split(':');
    const configFile = join(root, hostDir!, configArg.split('=')[1]!.slice(`${containerDir}/`.length));
    const config = parse(readFileSync(configFile, 'utf8')) as {
      rule_files: string[];
      scrape_configs: {
        job_name: string;
        metrics_path?: string;
        dns_sd_configs?: { names: string[]; type: string; port: number }[];
        static_configs?: { targets: string[] }[];
      }[];
    };
    const targetsOf = (job: string): string[] => {
      const sc = config.scrape_configs.find((c) => c.job_name === job);
      if (!sc) return [];
      return [
        ...(sc.dns_sd_configs ?? []).flatMap((d) => d.names.map((n) => `${n}:${d.port}`)),
        ...(sc.static_configs ?? []).flatMap((s) => s.targets),
      ];
    };

    it('loads deploy/prometheus/prometheus.yml with the alerting rules', () => {
      expect(configFile).toBe(join(root, 'deploy', 'prometheus', 'prometheus.yml'));
      expect(config.rule_files).toEqual(['paylater.rules.yml']);
      // Published on the host's loopback only (Prometheus has no authentication).
      expect(prometheus.ports).toEqual(['127.0.0.1:9090:9090']);
    });

    it("scrapes the API's internal /metrics, every worker replica's /metrics and the Temporal server", () => {
      expect(targetsOf('paylater-api')).toEqual([`api:${configOf('api').internalPort}`]);
      // dns_sd: compose's DNS gives every replica of `worker` (2), not one of them at random.
      expect(services.worker?.deploy?.replicas).toBeGreaterThan(1);
      expect(config.scrape_configs.find((c) => c.job_name === 'paylater-worker')?.dns_sd_configs).toBeDefined();
      expect(targetsOf('paylater-worker')).toEqual([`worker:${configOf('worker').workerMetricsPort}`]);
      const serverMetrics = services.temporal?.environment?.PROMETHEUS_ENDPOINT?.split(':')[1];
      expect(targetsOf('temporal-server')).toEqual([`temporal:${serverMetrics}`]);
      for (const job of ['paylater-api', 'paylater-worker', 'temporal-server'])
        expect(config.scrape_configs.find((c) => c.job_name === job)?.metrics_path ?? '/metrics').toBe('/metrics');
    });

    withPromtool('passes promtool check config (rule files included)', () => {
      if (!promtool)
        throw new Error('promtool is not installed: run `npm run toolchain` (Debian: apt-get install prometheus)');
      const result = spawnSync(promtool, ['check', 'config', configFile], { encoding: 'utf8', timeout: 60_000 });
      expect({ status: result.status, output: `${result.stdout}${result.stderr}` }).toMatchObject({ status: 0 });
      expect(result.stdout).toContain('SUCCESS: 1 rule files found');
    });
  });
});
