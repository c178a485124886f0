import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Postgres } from '../../tools/cluster/postgres';
import { serverEnv, type ServerPorts } from '../../tools/cluster/temporal-server';

/**
 * `npm run test:cluster` runs the production path on the CI machine itself: what it starts listens on 127.0.0.1 only
 * (Temporal's every service, PostgreSQL, the bank sandbox) and the database password is generated for the run, as
 * compose requires one with no default (test/deploy/docker-compose.test.ts). The run itself is the lead's CI step.
 */
const root = join(__dirname, '..', '..');
const ports: ServerPorts = {
  grpc: 1,
  http: 2,
  internalHttp: 3,
  membership: { frontend: 4, history: 5, matching: 6, worker: 7 },
  service: { history: 8, matching: 9, worker: 10 },
};
const pg = { host: '127.0.0.1', port: 11, user: 'temporal', password: 'generated-for-the-run' } as Postgres;

it("binds Temporal's services to the loopback, with the run's database password", () => {
  const env = serverEnv(pg, ports, '/dynamic.yaml');
  // config/docker.yaml: every service's bindOnIP (and the default public address) is BIND_ON_IP.
  expect(env.BIND_ON_IP).toBe('127.0.0.1');
  expect(env).toMatchObject({ POSTGRES_SEEDS: '127.0.0.1', POSTGRES_USER: 'temporal', POSTGRES_PWD: pg.password });
  // No listener the template would open on its own address: server metrics, pprof.
  expect(env.PROMETHEUS_ENDPOINT).toBeUndefined();
  expect(env.PPROF_PORT).toBeUndefined();
});

it('starts PostgreSQL and the sandbox on the loopback, with a password generated for the run', () => {
  expect(readFileSync(join(root, 'tools', 'cluster', 'postgres.ts'), 'utf8')).toContain("'listen_addresses=127.0.0.1'");
  // The cluster's PostgreSQL as the cluster run and the scale-out bench start it (tools/cluster/temporal-cluster.ts).
  expect(readFileSync(join(root, 'tools', 'cluster', 'temporal-cluster.ts'), 'utf8')).toMatch(
    /password: randomBytes\(\d+\)\.toString\('base64url'\)/,
  );
  const run = readFileSync(join(root, 'tools', 'cluster', 'run.ts'), 'utf8');
  expect(run).toContain('startTemporalCluster(');
  // The sandbox process as every harness starts it (tools/harness/service-processes.ts), on the loopback.
  expect(run).toContain('sandboxProcess(');
  expect(readFileSync(join(root, 'tools', 'harness', 'service-processes.ts'), 'utf8')).toContain(
    "SANDBOX_HOST: '127.0.0.1'",
  );
});
