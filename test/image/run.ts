import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitForTemporal } from '../../tools/harness/processes';
import { devServerArgs } from '../../src/temporal/dev-server-process';
import { findTemporalCli, MISSING_BINARY_HELP, projectRoot } from '../../src/temporal/binaries';
import {
  containerSpecs,
  envFile,
  healthcheckProblem,
  megabytes,
  shutdownTimeline,
  MERCHANT,
  parseOptions,
  pickPorts,
  seconds,
  stopProblem,
  type ContainerSpec,
  type HealthcheckConfig,
  type StopOutcome,
} from './plan';

/**
 * `npm run test:image`: the Dockerfile as written, built with podman (scripts/containers/build-app-image.sh: Docker's
 * format, so HEALTHCHECK is kept; the CA bundle as the build secret `npm-ca`), then run as the bank sandbox, the API
 * and the worker, one container each, against a Temporal dev server on the host's loopback. For each process:
 * healthy (its routes answer, and the image's HEALTHCHECK passes inside it), uid 1000, a read-only root file system
 * with no tmpfs at all (the one thing written is the API's audit trail, in the image's volume /var/lib/paylater),
 * no capabilities, and a clean stop on SIGTERM within its
 * grace period (`podman stop -t`: exit 0, not SIGKILL). Then one finance application through the containerized API's
 * merchant facade against the containerized sandbox, followed until the bank's status moves (the worker ran the
 * workflow and its activities: @temporalio/core-bridge loaded under the image's glibc) and the sandbox's webhook
 * reached the API. Prints the image's size and each process's start time (container start to healthy).
 *
 * Networking (podman as root): each container has slirp4netns with allow_host_loopback, its ports published on the
 * host's 127.0.0.1 (ports 18000-18999, test/image/plan.ts); 10.0.2.2 in a container is the host's loopback, where
 * the dev server and the other containers' publications are. The host network (`--network host`) would put the
 * worker's Runtime metrics port (a free one in 20000-32767) on the host and share every port with it.
 *
 * `--no-build` (or PAYLATER_IMAGE_NO_BUILD=1): use localhost/paylater:$PAYLATER_IMAGE_TAG as it is (default tag
 * `image-test`). `--keep`: leave everything running at the end. Exit 1: a check failed; 2: the run could not be set
 * up. The containers, the dev server and the temporary files are removed on exit, also on failure or Ctrl-C.
 */
const root = projectRoot(__dirname);
const HOST_FROM_CONTAINER = '10.0.2.2';
const NETWORK = 'slirp4netns:allow_host_loopback=true';
const podmanEnv = {
  ...process.env,
  // scripts/containers/env.sh, for podman called from here: its settings, and /usr/sbin for netavark's iptables.
  CONTAINERS_CONF: join(root, 'scripts', 'containers', 'containers.conf'),
  BUILDAH_FORMAT: 'docker',
  PATH: (process.env.PATH ?? '').split(':').includes('/usr/sbin')
    ? process.env.PATH
    : `${process.env.PATH ?? ''}:/usr/sbin:/sbin`,
};

const out = (line: string): void => void process.stdout.write(`${line}\n`);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

class SetupError extends Error {}

interface Result {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a command to its end; `inherit` streams its output here instead of collecting it. */
function run(command: string, args: string[], options: { env?: NodeJS.ProcessEnv; inherit?: boolean } = {}) {
  return new Promise<Result>((resolve) => {
    const child = spawn(command, args, {
      cwd: root,
      env: options.env ?? podmanEnv,
      stdio: options.inherit ? ['ignore', 'inherit', 'inherit'] : ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
    child.stderr?.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
    child.once('error', (err) => resolve({ code: null, stdout, stderr: stderr + err.message }));
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** podman's own complaint that no systemd runs the HEALTHCHECK timer (the check itself is run here instead). */
const SYSTEMD_NOISE = /unable to get systemd connection|healthcheck.*systemd|Removing timer for container/;
const podman = (...args: string[]) => run('podman', args);
const stderrOf = (r: Result) =>
  r.stderr
    .split('\n')
    .filter((l) => l.trim() && !SYSTEMD_NOISE.test(l))
    .join('\n');

function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

async function httpStatus(url: string, init: RequestInit = {}): Promise<number | undefined> {
  try {
    const res = await fetch(url, { ...init, signal: AbortSignal.timeout(3_000) });
    await res.arrayBuffer();
    return res.status;
  } catch {
    return undefined;
  }
}

async function json<T>(url: string, init: RequestInit = {}, timeoutMs = 10_000): Promise<{ status: number; body: T }> {
  const res = await fetch(url, { ...init, signal: AbortSignal.timeout(timeoutMs) });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON: kept as text
  }
  return { status: res.status, body: body as T };
}

const failures: string[] = [];
/** Set on SIGINT/SIGTERM: the containers are being removed, so what fails from then on is not reported. */
let interrupted = false;
function check(what: string, problem: string | undefined): boolean {
  if (interrupted) return false;
  if (problem === undefined) out(`  ok    ${what}`);
  else {
    out(`  FAIL  ${what}: ${problem}`);
    failures.push(`${what}: ${problem}`);
  }
  return problem === undefined;
}

interface Figures {
  process: string;
  startMs?: number;
  stop?: StopOutcome;
}

async function main(): Promise<number> {
  const options = parseOptions(process.argv.slice(2), process.env);
  const image = `localhost/paylater:${options.tag}`;
  const started = Date.now();
  const containers: string[] = [];
  let dev: ChildProcess | undefined;
  const dir = mkdtempSync(join(tmpdir(), 'paylater-image-test-'));
  chmodSync(dir, 0o700);

  let cleaning: Promise<void> | undefined;
  const cleanup = () =>
    (cleaning ??= (async () => {
      if (containers.length > 0) await podman('rm', '--force', '--time', '0', ...containers);
      if (dev && dev.exitCode === null && dev.signalCode === null) {
        const exited = new Promise((resolve) => dev!.once('exit', resolve));
        dev.kill('SIGTERM');
        const timer = setTimeout(() => dev!.kill('SIGKILL'), 10_000);
        await exited;
        clearTimeout(timer);
      }
      rmSync(dir, { recursive: true, force: true });
    })());
  for (const signal of ['SIGINT', 'SIGTERM'] as const)
    process.once(signal, () => {
      interrupted = true;
      out(`\n${signal}: removing the containers and the dev server`);
      void cleanup().then(() => process.exit(130));
    });

  try {
    const version = await podman('version', '--format', '{{.Client.Version}}');
    if (version.code !== 0)
      throw new SetupError(
        'podman is not usable here (Debian: scripts/install-system-packages.sh --containers): ' + version.stderr.trim(),
      );
    out(`podman ${version.stdout.trim()}, image ${image}`);

    // 1. The image.
    let buildMs: number | undefined;
    if (options.build) {
      out('build: scripts/containers/build-app-image.sh (the Dockerfile as written)');
      const t0 = Date.now();
      const build = await run('bash', ['scripts/containers/build-app-image.sh'], {
        env: { ...podmanEnv, PAYLATER_IMAGE_TAG: options.tag },
        inherit: true,
      });
      if (build.code !== 0) throw new SetupError(`the image build failed (exit ${build.code})`);
      buildMs = Date.now() - t0;
    } else if ((await podman('image', 'exists', image)).code !== 0) {
      throw new SetupError(`${image} does not exist: run without --no-build`);
    }
    const inspected = await podman('image', 'inspect', image);
    const [info] = JSON.parse(inspected.stdout) as {
      Size: number;
      Config: { User?: string; Healthcheck?: HealthcheckConfig };
      /** podman 4 puts the Docker-format image's healthcheck here, beside Config. */
      Healthcheck?: HealthcheckConfig;
    }[];
    if (!info) throw new SetupError(`podman image inspect ${image}: ${inspected.stderr}`);
    out('image');
    check(
      'HEALTHCHECK node scripts/healthcheck.cjs (Docker format)',
      healthcheckProblem(info.Config.Healthcheck ?? info.Healthcheck),
    );
    check(
      'USER node',
      info.Config.User === 'node' || info.Config.User === '1000' ? undefined : `USER is ${info.Config.User}`,
    );

    // 2. Temporal on the host's loopback.
    const cli = findTemporalCli();
    if (!cli) throw new SetupError(`no Temporal CLI: ${MISSING_BINARY_HELP}`);
    const start = 18000 + Math.floor(Math.random() * 900);
    const [temporal, ui, http, metrics, sandbox, apiPublic, apiInternal, worker] = await pickPorts(8, isFree, start);
    const args = [
      ...devServerArgs({ port: temporal!, uiPort: ui!, namespace: 'default', dbFile: join(dir, 'temporal.db') }),
      '--http-port',
      String(http),
      '--metrics-port',
      String(metrics),
    ];
    let devOutput = '';
    dev = spawn(cli, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    dev.stdout?.on('data', (c: Buffer) => (devOutput = (devOutput + c.toString('utf8')).slice(-4000)));
    dev.stderr?.on('data', (c: Buffer) => (devOutput = (devOutput + c.toString('utf8')).slice(-4000)));
    await waitForTemporal(`127.0.0.1:${temporal}`, 60_000).catch((err: Error) => {
      throw new SetupError(`${err.message}\n${devOutput}`);
    });
    out(`Temporal dev server on 127.0.0.1:${temporal} (containers: ${HOST_FROM_CONTAINER}:${temporal})`);

    // 3. The containers, one at a time: the sandbox, the API, the worker.
    const secrets = {
      webhookHash: randomBytes(36).toString('base64'),
      securityHeader: `Basic ${randomBytes(32).toString('base64')}`,
      bankClientSecret: randomBytes(18).toString('hex'),
      payloadKeys: `key-1:${randomBytes(32).toString('base64')}`,
      merchantKey: randomBytes(24).toString('hex'),
      operatorKey: randomBytes(24).toString('hex'),
    };
    const ports = {
      temporal: temporal!,
      sandbox: sandbox!,
      apiPublic: apiPublic!,
      apiInternal: apiInternal!,
      worker: worker!,
    };
    const specs = containerSpecs(ports, secrets, HOST_FROM_CONTAINER);
    const figures: Figures[] = specs.map((s) => ({ process: s.process }));
    const nameOf = (spec: ContainerSpec) => `paylater-image-test-${process.pid}-${spec.process}`;
    const hostUrl = (spec: ContainerSpec, port: number, path: string) => `http://127.0.0.1:${spec.ports[port]}${path}`;

    for (const [i, spec] of specs.entries()) {
      const name = nameOf(spec);
      const env = join(dir, `${spec.process}.env`);
      writeFileSync(env, envFile(spec.env), { mode: 0o600 });
      out(`${spec.process}: ${spec.command.join(' ')}`);
      const t0 = Date.now();
      containers.push(name);
      const started = await podman(
        'run',
        '--detach',
        '--name',
        name,
        '--network',
        NETWORK,
        ...Object.entries(spec.ports).flatMap(([c, h]) => ['--publish', `127.0.0.1:${h}:${c}`]),
        // No writable layer and no tmpfs: only the image's volume (/var/lib/paylater, the API's audit trail) is
        // writable, an anonymous volume that --rm removes.
        '--read-only',
        '--read-only-tmpfs=false',
        '--cap-drop=all',
        '--security-opt=no-new-privileges',
        '--env-file',
        env,
        image,
        ...spec.command,
      );
      if (started.code !== 0) throw new SetupError(`podman run ${name}: ${stderrOf(started)}`);
      const first = spec.health[0]!;
      const url = hostUrl(spec, first.port, first.path);
      for (;;) {
        if ((await httpStatus(url)) === 200) break;
        const state = await podman('container', 'inspect', '--format', '{{.State.Status}}', name);
        if (state.stdout.trim() !== 'running' || Date.now() - t0 > 90_000) {
          check(`${spec.process} healthy`, `${url} did not answer 200 (container ${state.stdout.trim()})`);
          throw new Error(`${spec.process} did not start`);
        }
        await sleep(100);
      }
      figures[i]!.startMs = Date.now() - t0;
      check(`${spec.process} healthy: ${first.path} on ${first.port} after ${seconds(figures[i]!.startMs)}`, undefined);
      for (const other of spec.health.slice(1)) {
        const status = await httpStatus(hostUrl(spec, other.port, other.path));
        check(`${spec.process} ${other.path} on ${other.port}`, status === 200 ? undefined : `answered ${status}`);
      }
      const hc = await podman('healthcheck', 'run', name);
      check(
        `${spec.process} HEALTHCHECK passes in the container`,
        hc.code === 0 ? undefined : `exit ${hc.code}: ${hc.stdout.trim()} ${stderrOf(hc)}`,
      );
      const uid = await podman('exec', name, 'id', '-u');
      const status = await podman('exec', name, 'cat', '/proc/1/status');
      const pid1 = /^Uid:\s+(.*)$/m.exec(status.stdout)?.[1]?.trim().split(/\s+/);
      check(
        `${spec.process} runs as uid 1000 (exec and PID 1)`,
        uid.stdout.trim() === '1000' && pid1?.every((u) => u === '1000')
          ? undefined
          : `id -u ${uid.stdout.trim()}, PID 1 Uid ${pid1?.join(' ')}`,
      );
      const write = await podman(
        'exec',
        name,
        'node',
        '-e',
        "for (const p of ['/app/probe', '/tmp/probe']) { try { require('fs').writeFileSync(p, ''); console.log(p, 'writable'); } catch (e) { console.log(p, e.code); } }",
      );
      const readonly = await podman('container', 'inspect', '--format', '{{.HostConfig.ReadonlyRootfs}}', name);
      check(
        `${spec.process} root file system read-only, no writable /tmp`,
        readonly.stdout.trim() === 'true' && !write.stdout.includes('writable') && write.stdout.includes('EROFS')
          ? undefined
          : `ReadonlyRootfs ${readonly.stdout.trim()}; ${write.stdout.trim().replace(/\n/g, ', ')}`,
      );
    }

    // 4. End to end: one application through the API's merchant facade, the worker, the sandbox and back.
    out('end to end: a finance application through the containers');
    const [sandboxSpec, apiSpec] = specs;
    const api = hostUrl(apiSpec!, 3001, '');
    const bank = hostUrl(sandboxSpec!, 4010, '');
    const auth = { authorization: `Bearer ${secrets.merchantKey}` };
    const reference = `image-${Date.now()}`;
    const e2eStart = Date.now();
    const created = await json<{ financeApplicationId?: string; bank?: { status?: string } }>(
      `${api}/applications`,
      {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify({ merchantReference: reference, redirectUrl: 'https://shop.example/return' }),
      },
      60_000,
    );
    const id = created.body.financeApplicationId;
    if (
      check(
        `POST /applications as ${MERCHANT}: 201`,
        created.status === 201 && id ? undefined : `${created.status} ${JSON.stringify(created.body)}`,
      )
    ) {
      let status: string | undefined;
      for (let i = 0; i < 4 && (status === undefined || status === 'CREATED'); i++) {
        const read = await json<{ status?: string }>(
          `${api}/applications/${reference}?waitForChangeFrom=CREATED&timeout=15s`,
          { headers: auth },
          30_000,
        );
        status = read.body.status;
      }
      check(
        `the worker moved it past CREATED (${status}) in ${seconds(Date.now() - e2eStart)}`,
        status && status !== 'CREATED' ? undefined : `still ${status}`,
      );
      const truth = await json<{ webhooks?: { outcome?: string; attempts?: { status?: number }[] }[] }>(
        `${bank}/_sandbox/applications/${id}`,
      );
      const delivered = (truth.body.webhooks ?? []).filter((w) => w.outcome === 'delivered').length;
      check(
        "the sandbox's webhooks reached the API's receiver",
        delivered > 0 ? undefined : JSON.stringify(truth.body.webhooks ?? truth.body),
      );
    }

    // 5. SIGTERM: each stops on its own within its grace period (the worker first, while Temporal still runs).
    out('stop: podman stop -t <grace> (SIGTERM, then SIGKILL at the grace period)');
    for (const spec of [...specs].reverse()) {
      const name = nameOf(spec);
      const t0 = Date.now();
      await podman('stop', '--time', String(spec.graceSeconds), name);
      const ms = Date.now() - t0;
      const exit = await podman('container', 'inspect', '--format', '{{.State.ExitCode}}', name);
      const stop = { exitCode: Number(exit.stdout.trim()), ms, graceSeconds: spec.graceSeconds };
      figures.find((f) => f.process === spec.process)!.stop = stop;
      out(`  ${spec.process}'s own shutdown log: ${shutdownTimeline((await podman('logs', name)).stdout, t0)}`);
      check(
        `${spec.process} stopped in ${seconds(ms)} (grace ${spec.graceSeconds} s), exit ${stop.exitCode}`,
        stopProblem(stop),
      );
    }

    // 6. The figures.
    out('');
    out(
      `image ${image}: ${megabytes(info.Size)}${buildMs === undefined ? ' (not built: --no-build)' : `, built in ${seconds(buildMs)}`}`,
    );
    out('process  start→healthy  stop (grace)     exit');
    for (const f of figures)
      out(
        `${f.process.padEnd(8)} ${(f.startMs === undefined ? '-' : seconds(f.startMs)).padEnd(14)} ${(f.stop ? `${seconds(f.stop.ms)} (${f.stop.graceSeconds} s)` : '-').padEnd(16)} ${f.stop?.exitCode ?? '-'}`,
      );
    out(`total ${seconds(Date.now() - started)}`);
    if (failures.length > 0) {
      await printLogs(containers);
      out(`\nnpm run test:image: ${failures.length} check(s) failed:\n  ${failures.join('\n  ')}`);
      return 1;
    }
    out('npm run test:image: every check passed');
    if (options.keep) {
      out(`--keep: containers ${containers.join(', ')} and the dev server run until Ctrl-C`);
      await new Promise(() => undefined);
    }
    return 0;
  } catch (err) {
    if (interrupted) return 130;
    await printLogs(containers);
    const message = err instanceof Error ? err.message : String(err);
    out(`\nnpm run test:image: ${message}`);
    if (failures.length > 0) out(`failed checks:\n  ${failures.join('\n  ')}`);
    return err instanceof SetupError ? 2 : 1;
  } finally {
    await cleanup();
  }
}

/** The last lines of each container's output, for a failed run. */
async function printLogs(containers: string[]): Promise<void> {
  for (const name of containers) {
    const logs = await podman('logs', '--tail', '25', name);
    out(`--- ${name} (last 25 lines)\n${(logs.stdout + stderrOf(logs)).trim()}`);
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    out(`npm run test:image: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(2);
  },
);
