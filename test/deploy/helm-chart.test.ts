import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { parse } from 'yaml';
import { ConfigError, loadConfig } from '../../src/config';
import { chartDir, checkManifests, helmTemplate, podSpecOf, requireHelm, root, type K8sObject } from '../helpers/helm';

/**
 * The Helm chart (deploy/helm/paylater, docs/deploying.md "Kubernetes (Helm chart)") rendered with each values set,
 * and its invariants checked by checkManifests (test/helpers/helm.ts), which is shown to report each one broken.
 * `npm run test:helm` also lints the chart and validates every object against the Kubernetes and CRD schemas
 * (scripts/test-helm.sh). helm comes from scripts/helm-tools.sh; without it these tests are skipped, saying how to
 * get it, and FAIL where PAYLATER_REQUIRE_TOOLS is set.
 */
const VALUE_SETS: Record<string, string[]> = {
  minimal: ['examples/minimal.yaml'],
  'temporal-cloud': ['examples/temporal-cloud.yaml'],
  'self-hosted-keda': ['examples/self-hosted-keda.yaml'],
  'worker-controller': ['examples/worker-controller.yaml'],
  'staging-sandbox': ['examples/staging-sandbox.yaml'],
};

/** What the Secret holds in these tests, where the chart does not create it (docs/deploying.md's command). */
function secretValues(objects: K8sObject[]): Record<string, string> {
  const merchantsFile = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === 'paylater-merchants');
  const merchantIds = merchantsFile
    ? Object.keys((JSON.parse(merchantsFile.data!['merchants.json']!) as { merchants: object }).merchants)
    : ['shop'];
  const created = objects.find((o) => o.kind === 'Secret')?.stringData;
  return (
    created ?? {
      WEBHOOK_HASH_SECRET: 'h'.repeat(48),
      WEBHOOK_SECURITY_HEADER: `Basic ${'s'.repeat(44)}`,
      BANK_CLIENT_SECRET: 'bank-client-secret',
      PAYLOAD_ENCRYPTION_KEYS: `key-1:${Buffer.alloc(32, 7).toString('base64')}`,
      MERCHANT_API_KEYS: merchantIds.map((id, i) => `${id}:${String(i).repeat(32)}`).join(','),
      OPERATOR_API_KEYS: `ops:${'o'.repeat(32)}`,
      PROMETHEUS_OPERATOR_KEY: 'm'.repeat(48),
      CALLBACK_SIGNING_MASTER_SECRETS: 'c'.repeat(48),
      TEMPORAL_API_KEY: 't'.repeat(48),
      AUDIT_LOG: 'postgres://paylater:audit-password@postgres.example:5432/paylater_audit',
    }
  );
}

/**
 * A container's environment as the kubelet gives it: the ConfigMaps of envFrom, then env in order, secrets from
 * secretValues and $(VAR) expanded. A file the pod mounts under /etc/paylater is written under `dir` (the merchants
 * file from its ConfigMap, a stand-in for a certificate) and the variable points there.
 */
function containerEnv(objects: K8sObject[], workload: K8sObject, dir: string): Record<string, string> {
  const c = podSpecOf(workload)!.containers[0]!;
  const secrets = secretValues(objects);
  const env: Record<string, string> = {};
  for (const from of c.envFrom ?? []) Object.assign(env, find(objects, 'ConfigMap', from.configMapRef!.name).data);
  for (const e of c.env ?? []) {
    const ref = e.valueFrom?.secretKeyRef;
    if (ref) {
      if (secrets[ref.key] !== undefined) env[e.name] = secrets[ref.key]!;
      else if (!ref.optional) throw new Error(`${e.name}: the Secret has no ${ref.key}`);
    } else {
      env[e.name] = (e.value ?? '').replace(/\$\((\w+)\)/g, (whole, name: string) => env[name] ?? whole);
    }
  }
  for (const [name, value] of Object.entries(env)) {
    if (!value.startsWith('/etc/paylater/')) continue;
    const path = join(dir, value);
    mkdirSync(dirname(path), { recursive: true });
    const merchants = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === 'paylater-merchants');
    writeFileSync(path, name === 'MERCHANTS_FILE' ? merchants!.data!['merchants.json']! : 'a PEM file\n');
    env[name] = path;
  }
  return env;
}

function render(files: string[], set: string[] = []): K8sObject[] {
  const result = helmTemplate(files, set);
  if (result.status !== 0) throw new Error(`helm template failed: ${result.output}`);
  return result.objects;
}

function find(objects: K8sObject[], kind: string, name: string): K8sObject {
  const found = objects.find((o) => o.kind === kind && o.metadata.name === name);
  if (!found)
    throw new Error(`no ${kind}/${name} among ${objects.map((o) => `${o.kind}/${o.metadata.name}`).join(', ')}`);
  return found;
}

/** The first container of a workload, to mutate. */
function container(o: K8sObject): Record<string, unknown> {
  return podSpecOf(o)!.containers[0] as unknown as Record<string, unknown>;
}

function env(o: K8sObject, name: string): string | undefined {
  return podSpecOf(o)!.containers[0]!.env?.find((e) => e.name === name)?.value;
}

describe('the values sets', () => {
  it('are every example of the chart (scripts/test-helm.sh lints and validates each too)', () => {
    const examples = readdirSync(join(chartDir, 'examples')).filter((f) => f.endsWith('.yaml'));
    expect(Object.values(VALUE_SETS).flat().sort()).toEqual(examples.map((f) => `examples/${f}`).sort());
  });
});

describe("files/paylater.rules.yml, the chart's copy of the alert rules", () => {
  it('is deploy/prometheus/paylater.rules.yml byte for byte (copy it again after changing the rules)', () => {
    const source = readFileSync(join(root, 'deploy', 'prometheus', 'paylater.rules.yml'), 'utf8');
    expect(readFileSync(join(chartDir, 'files', 'paylater.rules.yml'), 'utf8')).toBe(source);
  });
});

requireHelm('the Helm chart tests')('the Helm chart', () => {
  describe.each(Object.entries(VALUE_SETS))('rendered with the %s values', (_name, files) => {
    let objects: K8sObject[];
    beforeAll(() => {
      objects = render(files);
    });

    it('holds every invariant', () => {
      expect(objects.length).toBeGreaterThan(5);
      expect(checkManifests(objects)).toEqual([]);
    });

    it('sets the drain variables from the values that set terminationGracePeriodSeconds', () => {
      const api = find(objects, 'Deployment', 'paylater-api');
      expect(env(api, 'SHUTDOWN_DRAIN_DELAY')).toBe('5s');
      expect(env(api, 'SHUTDOWN_GRACE_PERIOD')).toBe('10s');
      // preStop 2 + drain 5 + grace 10 + 1 (the 250 ms close, rounded up) + a margin of 2.
      expect(podSpecOf(api)!.terminationGracePeriodSeconds).toBe(20);
      for (const worker of objects.filter((o) => podSpecOf(o) && o.metadata.name.includes('worker'))) {
        expect(env(worker, 'WORKER_SHUTDOWN_GRACE_TIME')).toBe('10s');
        // grace 10 + the SDK's 5 + a margin of 2.
        expect(podSpecOf(worker)!.terminationGracePeriodSeconds).toBe(17);
      }
    });

    it('gives the API and the workers (a Deployment per build) an environment their configuration accepts', () => {
      const dir = mkdtempSync(join(tmpdir(), 'helm-env-'));
      try {
        const api = loadConfig(containerEnv(objects, find(objects, 'Deployment', 'paylater-api'), dir), {
          role: 'api',
        });
        // The drain the process runs is the one terminationGracePeriodSeconds was computed from.
        expect(api.shutdown).toMatchObject({ drainDelayMs: 5000, gracePeriodMs: 10_000 });
        expect({ port: api.port, internalPort: api.internalPort }).toEqual({ port: 3000, internalPort: 3001 });
        // The replicas share one audit trail: the file default would be on the read-only root (docs/security.md).
        expect(api.audit.kind).toBe('postgres');
        if (objects.some((o) => o.kind === 'ServiceMonitor'))
          expect(api.operatorApiKeys.keys.map((k) => k.name)).toEqual(['ops', 'prometheus']);
        const workers = objects.filter(
          (o) => o.kind === 'Deployment' && o.metadata.name.startsWith('paylater-worker-'),
        );
        for (const worker of workers) {
          const config = loadConfig(containerEnv(objects, worker, dir), { role: 'worker' });
          expect(config.shutdown.workerGraceMs).toBe(10_000);
          expect(config.workerMetricsPort).toBe(9464);
        }
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });

    it('keeps the internal listener a ClusterIP Service', () => {
      const internal = find(objects, 'Service', 'paylater-internal');
      expect(internal.spec).toMatchObject({ type: 'ClusterIP', ports: [{ port: 3001 }] });
    });
  });

  it('computes terminationGracePeriodSeconds from the drain values it sets', () => {
    const objects = render(
      ['examples/minimal.yaml'],
      ['api.shutdown.drainDelaySeconds=30', 'workers.shutdown.graceTimeSeconds=60'],
    );
    const api = find(objects, 'Deployment', 'paylater-api');
    expect(env(api, 'SHUTDOWN_DRAIN_DELAY')).toBe('30s');
    expect(podSpecOf(api)!.terminationGracePeriodSeconds).toBe(2 + 30 + 10 + 1 + 2);
    const worker = find(objects, 'Deployment', 'paylater-worker-current');
    expect(podSpecOf(worker)!.terminationGracePeriodSeconds).toBe(60 + 5 + 2);
    expect(checkManifests(objects)).toEqual([]);
  });

  it('controller mode: the worker still refuses the Worker Deployment name temporal-worker-controller gives', () => {
    // The gap docs/deploying.md names: the controller sets TEMPORAL_DEPLOYMENT_NAME to <namespace>/<name>, which
    // the wrapper passes on as WORKER_DEPLOYMENT_NAME. When the worker accepts it, this test says the mode can run.
    const objects = render(['examples/worker-controller.yaml']);
    const wd = find(objects, 'WorkerDeployment', 'paylater-worker');
    const dir = mkdtempSync(join(tmpdir(), 'helm-env-'));
    try {
      const env = containerEnv(objects, wd, dir);
      // What the controller appends (its Connection: address, namespace; the client certificate's paths).
      Object.assign(env, {
        TEMPORAL_ADDRESS: 'payments.a1b2c.tmprl.cloud:7233',
        TEMPORAL_NAMESPACE: 'payments.a1b2c',
        WORKER_DEPLOYMENT_NAME: 'payments/paylater-worker',
        WORKER_BUILD_ID: 'wf-3f9a1c2e4b5d6a7f',
      });
      expect(() => loadConfig(env, { role: 'worker' })).toThrow(ConfigError);
      expect(() => loadConfig(env, { role: 'worker' })).toThrow(/WORKER_DEPLOYMENT_NAME/);
      expect(() => loadConfig({ ...env, WORKER_DEPLOYMENT_NAME: 'paylater-worker' }, { role: 'worker' })).not.toThrow();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    expect(podSpecOf(wd)!.containers[0]!.env!.map((e) => e.name)).not.toContain('TEMPORAL_ADDRESS');
  });

  it('renders the alert rules of deploy/prometheus as a PrometheusRule', () => {
    const objects = render(['examples/temporal-cloud.yaml']);
    const rule = find(objects, 'PrometheusRule', 'paylater');
    const source = parse(readFileSync(join(root, 'deploy', 'prometheus', 'paylater.rules.yml'), 'utf8')) as {
      groups: unknown[];
    };
    expect(rule.spec).toEqual({ groups: source.groups });
  });

  it('sends the operator key of the Secret to the API\'s /metrics, and lists it as the operator "prometheus"', () => {
    const objects = render(['examples/temporal-cloud.yaml']);
    const monitor = find(objects, 'ServiceMonitor', 'paylater');
    const endpoints = (monitor.spec as { endpoints: Record<string, unknown>[] }).endpoints;
    expect(endpoints.find((e) => e.port === 'internal')).toMatchObject({
      path: '/metrics',
      authorization: { type: 'Bearer', credentials: { name: 'paylater-secrets', key: 'PROMETHEUS_OPERATOR_KEY' } },
    });
    const api = find(objects, 'Deployment', 'paylater-api');
    expect(env(api, 'OPERATOR_API_KEYS')).toBe('$(PAYLATER_OPERATOR_API_KEYS),prometheus:$(PROMETHEUS_OPERATOR_KEY)');
  });

  it('points the Ingress at the public Service only', () => {
    const objects = render(['examples/temporal-cloud.yaml']);
    const ingress = find(objects, 'Ingress', 'paylater');
    const paths = (ingress.spec as { rules: { http: { paths: { backend: unknown }[] } }[] }).rules[0]!.http.paths;
    expect(paths.map((p) => p.backend)).toEqual([{ service: { name: 'paylater-public', port: { name: 'public' } } }]);
  });

  it('gives KEDA the task queue and each build of the Worker Deployment', () => {
    const objects = render(['examples/self-hosted-keda.yaml']);
    const scaled = objects.filter((o) => o.kind === 'ScaledObject');
    expect(scaled.map((o) => o.metadata.name)).toEqual([
      'paylater-worker-wf-3f9a1c2e4b5d6a7f',
      'paylater-worker-wf-8c7d6e5f4a3b2c1d',
    ]);
    expect((scaled[1]!.spec as { triggers: unknown[] }).triggers[0]).toMatchObject({
      type: 'temporal',
      metadata: {
        taskQueue: 'paylater',
        workerDeploymentName: 'paylater',
        workerDeploymentBuildId: 'wf-8c7d6e5f4a3b2c1d',
      },
    });
    // Replicas are the scaler's: the Deployments leave them unset.
    for (const d of objects.filter((o) => o.kind === 'Deployment' && o.metadata.name.includes('worker')))
      expect(d.spec).not.toHaveProperty('replicas');
  });

  describe('refuses', () => {
    it('a secret-looking name among the plain settings (values.schema.json)', () => {
      const result = helmTemplate(['examples/minimal.yaml'], ['env.BANK_CLIENT_SECRET=oops']);
      expect(result.status).not.toBe(0);
      expect(result.output).toMatch(/invalid propertyName 'BANK_CLIENT_SECRET'/);
    });

    it('a merchants file with signing secrets in a ConfigMap', () => {
      const result = helmTemplate(
        ['examples/minimal.yaml'],
        ['merchants.content.merchants.shop.callbackSigningSecrets[0]=whsec_x'],
      );
      expect(result.status).not.toBe(0);
      expect(result.output).toMatch(/callbackSigningSecrets: put the file in a Secret/);
    });

    it('an autoscaler for the WorkerDeployment, which has no scale subresource', () => {
      const result = helmTemplate(['examples/worker-controller.yaml'], ['autoscaling.mode=keda']);
      expect(result.status).not.toBe(0);
      expect(result.output).toMatch(/autoscaling.mode must be none with workers.mode controller/);
    });

    it('secrets.create without a required secret', () => {
      const result = helmTemplate(['examples/minimal.yaml'], ['secrets.create=true']);
      expect(result.status).not.toBe(0);
      expect(result.output).toMatch(/secrets\.values\.WEBHOOK_HASH_SECRET is required/);
    });
  });

  describe('checkManifests reports', () => {
    let objects: K8sObject[];
    beforeEach(() => {
      objects = render(['examples/temporal-cloud.yaml']);
    });

    it('a removed readiness probe', () => {
      delete container(find(objects, 'Deployment', 'paylater-api')).readinessProbe;
      expect(checkManifests(objects)).toEqual(['Deployment/paylater-api container api: no readinessProbe']);
    });

    it('a liveness probe on the wrong listener', () => {
      const worker = find(objects, 'Deployment', 'paylater-worker-wf-3f9a1c2e4b5d6a7f');
      container(worker).livenessProbe = { httpGet: { path: '/healthz', port: 3000 } };
      expect(checkManifests(objects)).toEqual([
        'Deployment/paylater-worker-wf-3f9a1c2e4b5d6a7f container worker: livenessProbe is /healthz on 3000, ' +
          'expected /healthz on 9464',
      ]);
    });

    it('a removed preStop', () => {
      delete container(find(objects, 'Deployment', 'paylater-api')).lifecycle;
      expect(checkManifests(objects)).toEqual(['Deployment/paylater-api container api: no preStop sleep']);
    });

    it('a grace period shorter than the drain', () => {
      const api = find(objects, 'Deployment', 'paylater-api');
      podSpecOf(api)!.terminationGracePeriodSeconds = 15;
      const worker = find(objects, 'Deployment', 'paylater-worker-wf-3f9a1c2e4b5d6a7f');
      const grace = podSpecOf(worker)!.containers[0]!.env!.find((e) => e.name === 'WORKER_SHUTDOWN_GRACE_TIME')!;
      grace.value = '30s';
      expect(checkManifests(objects)).toEqual([
        'Deployment/paylater-api: terminationGracePeriodSeconds 15 does not exceed preStop 2 + drain 5 + grace 10 + 0.25 s',
        'Deployment/paylater-worker-wf-3f9a1c2e4b5d6a7f: terminationGracePeriodSeconds 17 does not exceed ' +
          'WORKER_SHUTDOWN_GRACE_TIME 30 + 5 s',
      ]);
    });

    it('a drain variable no longer set', () => {
      const api = podSpecOf(find(objects, 'Deployment', 'paylater-api'))!.containers[0]!;
      api.env = api.env!.filter((e) => e.name !== 'SHUTDOWN_DRAIN_DELAY');
      expect(checkManifests(objects)).toEqual([
        'Deployment/paylater-api container api: SHUTDOWN_DRAIN_DELAY is not set',
      ]);
    });

    it('the internal listener exposed, or behind the Ingress', () => {
      find(objects, 'Service', 'paylater-internal').spec!.type = 'LoadBalancer';
      const ingress = find(objects, 'Ingress', 'paylater');
      const rule = (ingress.spec as { rules: { http: { paths: { backend: { service: { name: string } } }[] } }[] })
        .rules[0]!;
      rule.http.paths[0]!.backend.service.name = 'paylater-internal';
      expect(checkManifests(objects)).toEqual([
        'Service/paylater-internal: exposes the internal port 3001 as LoadBalancer',
        'Ingress/paylater: backend paylater-internal is not the public Service alone',
      ]);
    });

    it('a container without requests, or running as root', () => {
      const api = container(find(objects, 'Deployment', 'paylater-api'));
      api.resources = { limits: { memory: '1Gi' } };
      api.securityContext = { ...(api.securityContext as object), runAsUser: 0, readOnlyRootFilesystem: false };
      expect(checkManifests(objects)).toEqual([
        'Deployment/paylater-api container api: no cpu request',
        'Deployment/paylater-api container api: no memory request',
        'Deployment/paylater-api container api: runs as uid 0',
        'Deployment/paylater-api container api: readOnlyRootFilesystem is not true',
      ]);
    });

    it('a secret-looking key in a ConfigMap, at the top or inside a JSON value', () => {
      const cm = find(objects, 'ConfigMap', 'paylater-env');
      cm.data = { ...cm.data, BANK_CLIENT_SECRET: 'x', 'merchants.json': '{"merchants":{"a":{"apiToken":"x"}}}' };
      expect(checkManifests(objects)).toEqual([
        "ConfigMap/paylater-env: key BANK_CLIENT_SECRET looks secret (a Secret's place)",
        "ConfigMap/paylater-env: key apiToken looks secret (a Secret's place)",
      ]);
    });
  });
});
