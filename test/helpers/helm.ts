import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { parseDurationMs } from '../../src/shared/application-settings';
import { executable } from '../../src/temporal/binaries';

/** The chart of deploy/helm/paylater and what renders and checks it (docs/deploying.md "Kubernetes (Helm chart)"). */
export const root = join(__dirname, '..', '..');
export const chartDir = join(root, 'deploy', 'helm', 'paylater');

/** A rendered Kubernetes object, as far as the checks read it. */
export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string> };
  spec?: Record<string, unknown>;
  data?: Record<string, string>;
  stringData?: Record<string, string>;
}

/** As scripts/helm-tools.sh installs it: HELM_PATH, .tools/bin/helm, then PATH; undefined when absent. */
export function findHelm(): string | undefined {
  const candidates = [process.env.HELM_PATH, join(root, '.tools', 'bin', 'helm')];
  for (const c of candidates) if (c && executable(c)) return c;
  const found = spawnSync('sh', ['-c', 'command -v helm'], { encoding: 'utf8' });
  return found.status === 0 && found.stdout.trim() ? found.stdout.trim() : undefined;
}

/**
 * `describe` for tests that need helm: skipped where it is missing, with one line saying how to get it, and failing
 * instead where PAYLATER_REQUIRE_TOOLS is set (.ci/run and `npm run test:helm`, after scripts/helm-tools.sh).
 */
export function requireHelm(what: string): jest.Describe {
  if (findHelm() || process.env.PAYLATER_REQUIRE_TOOLS) return describe;
  process.stderr.write(
    `helm not found: ${what} skipped. Get it with \`bash scripts/helm-tools.sh\` (a Go build into .tools/bin), ` +
      'or run `npm run test:helm`.\n',
  );
  return describe.skip;
}

/** `helm template` of the chart with these values files (relative to the chart) and --set pairs. */
export function helmTemplate(
  valuesFiles: string[] = [],
  set: string[] = [],
): { status: number | null; output: string; objects: K8sObject[] } {
  const helm = findHelm();
  if (!helm) throw new Error('helm is not installed: run `bash scripts/helm-tools.sh` (or `npm run test:helm`)');
  const args = ['template', 'paylater', chartDir, '--namespace', 'payments'];
  for (const f of valuesFiles) args.push('-f', join(chartDir, f));
  for (const s of set) args.push('--set', s);
  const result = spawnSync(helm, args, { encoding: 'utf8', timeout: 60_000 });
  if (result.status !== 0) return { status: result.status, output: `${result.stdout}${result.stderr}`, objects: [] };
  const objects = parseAllDocuments(result.stdout)
    .map((d) => d.toJS() as K8sObject | null)
    .filter((o): o is K8sObject => o !== null && typeof o === 'object');
  return { status: result.status, output: result.stderr, objects };
}

// ---- The invariants: a plain function over rendered objects, so a test can show each one fire. ----

interface Probe {
  httpGet?: { path: string; port: number | string };
  tcpSocket?: { port: number | string };
}
export interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef?: { name: string; key: string; optional?: boolean } };
}
export interface Container {
  name: string;
  ports?: { name?: string; containerPort: number }[];
  env?: EnvVar[];
  envFrom?: { configMapRef?: { name: string } }[];
  readinessProbe?: Probe;
  livenessProbe?: Probe;
  lifecycle?: { preStop?: { sleep?: { seconds: number }; exec?: { command: string[] } } };
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext?: SecurityContext;
}
interface SecurityContext {
  runAsNonRoot?: boolean;
  runAsUser?: number;
  allowPrivilegeEscalation?: boolean;
  readOnlyRootFilesystem?: boolean;
  capabilities?: { drop?: string[] };
  seccompProfile?: { type: string };
}
export interface PodSpec {
  containers: Container[];
  initContainers?: Container[];
  terminationGracePeriodSeconds?: number;
  securityContext?: SecurityContext;
}
interface ServicePort {
  port: number;
  targetPort?: number | string;
  nodePort?: number;
}

export const PUBLIC_PORT = 3000;
export const INTERNAL_PORT = 3001;
export const WORKER_METRICS_PORT = 9464;
/** The worker SDK's own margin after WORKER_SHUTDOWN_GRACE_TIME (SHUTDOWN_FORCE_MARGIN_MS, src/worker/factory.ts). */
export const WORKER_FORCE_MARGIN_SECONDS = 5;
/** The API's last step after SHUTDOWN_GRACE_PERIOD (docs/operations.md "Shutdown and draining"). */
export const API_CLOSE_SECONDS = 0.25;
const SECRET_LOOKING = /SECRET|KEY|PASSWORD|TOKEN/i;

/** The pod spec of a workload (Deployment, or temporal-worker-controller's WorkerDeployment), else undefined. */
export function podSpecOf(o: K8sObject): PodSpec | undefined {
  if (o.kind !== 'Deployment' && o.kind !== 'WorkerDeployment') return undefined;
  return (o.spec?.template as { spec?: PodSpec } | undefined)?.spec;
}

function componentOf(o: K8sObject): string | undefined {
  return (o.spec?.template as { metadata?: { labels?: Record<string, string> } } | undefined)?.metadata?.labels?.[
    'app.kubernetes.io/component'
  ];
}

function portNumber(container: Container, port: number | string | undefined): number | undefined {
  if (typeof port === 'number') return port;
  return container.ports?.find((p) => p.name === port)?.containerPort;
}

function envSeconds(container: Container, name: string): number | undefined {
  const value = container.env?.find((e) => e.name === name)?.value;
  if (value === undefined) return undefined;
  const ms = parseDurationMs(value);
  return ms === undefined ? undefined : ms / 1000;
}

function preStopSeconds(container: Container): number | undefined {
  const preStop = container.lifecycle?.preStop;
  if (preStop?.sleep) return preStop.sleep.seconds;
  const command = preStop?.exec?.command ?? [];
  const sleep = command.indexOf('sleep');
  return sleep >= 0 ? Number(command[sleep + 1]) : undefined;
}

function checkHttpProbe(
  problems: string[],
  where: string,
  container: Container,
  kind: 'readinessProbe' | 'livenessProbe',
  path: string,
  port: number,
): void {
  const probe = container[kind];
  if (!probe) {
    problems.push(`${where}: no ${kind}`);
    return;
  }
  const got = probe.httpGet ? `${probe.httpGet.path} on ${portNumber(container, probe.httpGet.port)}` : 'not httpGet';
  if (got !== `${path} on ${port}`) problems.push(`${where}: ${kind} is ${got}, expected ${path} on ${port}`);
}

function checkSecurity(problems: string[], where: string, pod: PodSpec, container: Container): void {
  const c = container.securityContext ?? {};
  const p = pod.securityContext ?? {};
  if ((c.runAsNonRoot ?? p.runAsNonRoot) !== true) problems.push(`${where}: runAsNonRoot is not true`);
  if ((c.runAsUser ?? p.runAsUser) === 0) problems.push(`${where}: runs as uid 0`);
  if (c.allowPrivilegeEscalation !== false) problems.push(`${where}: allowPrivilegeEscalation is not false`);
  if (c.readOnlyRootFilesystem !== true) problems.push(`${where}: readOnlyRootFilesystem is not true`);
  if (!c.capabilities?.drop?.includes('ALL')) problems.push(`${where}: capabilities do not drop ALL`);
  if ((c.seccompProfile ?? p.seccompProfile)?.type !== 'RuntimeDefault')
    problems.push(`${where}: seccompProfile is not RuntimeDefault`);
}

function checkResources(problems: string[], where: string, container: Container): void {
  for (const r of ['cpu', 'memory'])
    if (!container.resources?.requests?.[r]) problems.push(`${where}: no ${r} request`);
  if (!container.resources?.limits?.memory) problems.push(`${where}: no memory limit`);
}

/** Every key of a JSON document, at any depth (a merchants file in a ConfigMap). */
function jsonKeys(text: string): string[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return [];
  }
  const keys: string[] = [];
  const walk = (v: unknown): void => {
    if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === 'object')
      for (const [k, child] of Object.entries(v)) {
        keys.push(k);
        walk(child);
      }
  };
  walk(parsed);
  return keys;
}

/**
 * The chart's invariants over rendered objects; each problem is one line naming the object. Empty: all hold.
 * - every container of a workload has a readiness and a liveness probe: the API's /readyz and /healthz on the
 *   internal listener, a worker's on WORKER_METRICS_PORT;
 * - the API has a preStop, and its terminationGracePeriodSeconds exceeds preStop + SHUTDOWN_DRAIN_DELAY +
 *   SHUTDOWN_GRACE_PERIOD + 250 ms; a worker's exceeds WORKER_SHUTDOWN_GRACE_TIME + the SDK's 5 s;
 * - no Service exposes the internal port except as ClusterIP, and every Ingress backend is a Service of the public
 *   port alone;
 * - every container requests CPU and memory and has a memory limit, and runs non-root, read-only, without
 *   privilege escalation or capabilities, under seccomp RuntimeDefault;
 * - no ConfigMap key (nor a key inside a JSON value) looks secret.
 */
export function checkManifests(objects: K8sObject[]): string[] {
  const problems: string[] = [];
  const services = new Map<string, ServicePort[]>();

  for (const o of objects) {
    const id = `${o.kind}/${o.metadata.name}`;
    const pod = podSpecOf(o);
    if (pod) {
      const component = componentOf(o);
      for (const container of [...(pod.initContainers ?? []), ...pod.containers]) {
        const where = `${id} container ${container.name}`;
        checkResources(problems, where, container);
        checkSecurity(problems, where, pod, container);
      }
      for (const container of pod.containers) {
        const where = `${id} container ${container.name}`;
        if (component === 'api') {
          checkHttpProbe(problems, where, container, 'readinessProbe', '/readyz', INTERNAL_PORT);
          checkHttpProbe(problems, where, container, 'livenessProbe', '/healthz', INTERNAL_PORT);
          const preStop = preStopSeconds(container);
          const drain = envSeconds(container, 'SHUTDOWN_DRAIN_DELAY');
          const grace = envSeconds(container, 'SHUTDOWN_GRACE_PERIOD');
          if (preStop === undefined) problems.push(`${where}: no preStop sleep`);
          if (drain === undefined) problems.push(`${where}: SHUTDOWN_DRAIN_DELAY is not set`);
          if (grace === undefined) problems.push(`${where}: SHUTDOWN_GRACE_PERIOD is not set`);
          const needed = (preStop ?? 0) + (drain ?? 0) + (grace ?? 0) + API_CLOSE_SECONDS;
          const given = pod.terminationGracePeriodSeconds ?? 30;
          if (given <= needed)
            problems.push(
              `${id}: terminationGracePeriodSeconds ${given} does not exceed preStop ${preStop} + drain ${drain} + ` +
                `grace ${grace} + ${API_CLOSE_SECONDS} s`,
            );
        } else if (component === 'worker') {
          checkHttpProbe(problems, where, container, 'readinessProbe', '/readyz', WORKER_METRICS_PORT);
          checkHttpProbe(problems, where, container, 'livenessProbe', '/healthz', WORKER_METRICS_PORT);
          const grace = envSeconds(container, 'WORKER_SHUTDOWN_GRACE_TIME');
          if (grace === undefined) problems.push(`${where}: WORKER_SHUTDOWN_GRACE_TIME is not set`);
          const needed = (grace ?? 0) + WORKER_FORCE_MARGIN_SECONDS;
          const given = pod.terminationGracePeriodSeconds ?? 30;
          if (given <= needed)
            problems.push(
              `${id}: terminationGracePeriodSeconds ${given} does not exceed WORKER_SHUTDOWN_GRACE_TIME ${grace} + ` +
                `${WORKER_FORCE_MARGIN_SECONDS} s`,
            );
        } else {
          if (!container.readinessProbe) problems.push(`${where}: no readinessProbe`);
          if (!container.livenessProbe) problems.push(`${where}: no livenessProbe`);
        }
      }
    }

    if (o.kind === 'Service') {
      const spec = o.spec as { type?: string; ports?: ServicePort[] };
      const ports = spec.ports ?? [];
      services.set(o.metadata.name, ports);
      const internal = ports.some((p) => p.port === INTERNAL_PORT || p.targetPort === INTERNAL_PORT);
      const namedInternal = ports.some((p) => p.targetPort === 'internal');
      if ((internal || namedInternal) && (spec.type ?? 'ClusterIP') !== 'ClusterIP')
        problems.push(`${id}: exposes the internal port ${INTERNAL_PORT} as ${spec.type}`);
    }

    if (o.kind === 'ConfigMap')
      for (const [key, value] of Object.entries(o.data ?? {}))
        for (const k of [key, ...jsonKeys(value)])
          if (SECRET_LOOKING.test(k)) problems.push(`${id}: key ${k} looks secret (a Secret's place)`);
  }

  for (const o of objects.filter((x) => x.kind === 'Ingress')) {
    const rules = (o.spec?.rules ?? []) as {
      http?: { paths: { backend: { service?: { name: string } } }[] };
    }[];
    const backends = rules.flatMap((r) => r.http?.paths ?? []).map((p) => p.backend.service?.name);
    const defaultBackend = (o.spec?.defaultBackend as { service?: { name: string } } | undefined)?.service?.name;
    for (const name of defaultBackend ? [...backends, defaultBackend] : backends) {
      const ports = name === undefined ? undefined : services.get(name);
      const onlyPublic =
        ports !== undefined &&
        ports.length > 0 &&
        ports.every((p) => p.port === PUBLIC_PORT && (p.targetPort ?? PUBLIC_PORT) !== INTERNAL_PORT) &&
        ports.every((p) => p.targetPort !== 'internal');
      if (!onlyPublic) problems.push(`Ingress/${o.metadata.name}: backend ${name} is not the public Service alone`);
    }
  }
  return problems;
}
