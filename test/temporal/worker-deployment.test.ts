import {
  bootstrapCurrentVersion,
  buildIdOf,
  DEPLOYMENT_NAME_PATTERN,
  makeCurrentVersion,
  openRunsOnOtherBuildsQuery,
  versionString,
  type DeploymentService,
} from '../../src/temporal/worker-deployment';
import { loadConfig } from '../../src/config';

const version = { deploymentName: 'paylater', buildId: 'wf-0123456789abcdef' };

describe('Worker Deployment names', () => {
  it('derives the build id from the bundle inputs hash, and refuses anything else', () => {
    expect(buildIdOf('ab'.repeat(32))).toBe('wf-abababababababab');
    expect(() => buildIdOf('not a hash')).toThrow(/SHA-256/);
    expect(buildIdOf('ab'.repeat(32))).toMatch(DEPLOYMENT_NAME_PATTERN);
  });
  it('spells versions as the CLI and the search attribute do', () => {
    expect(versionString(version)).toBe('paylater.wf-0123456789abcdef');
    expect(openRunsOnOtherBuildsQuery(version)).toBe(
      "TemporalWorkerDeployment = 'paylater' AND TemporalWorkerDeploymentVersion != 'paylater:wf-0123456789abcdef' AND ExecutionStatus = 'Running'",
    );
    expect(openRunsOnOtherBuildsQuery(version, 'paylater')).toBe(
      "TaskQueue = 'paylater' AND ExecutionStatus = 'Running' AND (TemporalWorkerDeploymentVersion IS NULL OR " +
        "(TemporalWorkerDeployment = 'paylater' AND TemporalWorkerDeploymentVersion != 'paylater:wf-0123456789abcdef'))",
    );
  });
  it('reads WORKER_DEPLOYMENT_NAME and WORKER_BUILD_ID, and stops start-up naming a bad one', () => {
    expect(loadConfig({}).temporal.deployment).toEqual({ name: 'paylater', buildId: undefined });
    expect(loadConfig({ WORKER_DEPLOYMENT_NAME: 'shop', WORKER_BUILD_ID: 'v2' }).temporal.deployment).toEqual({
      name: 'shop',
      buildId: 'v2',
    });
    expect(() => loadConfig({ WORKER_BUILD_ID: 'v2.1' })).toThrow(/WORKER_BUILD_ID/);
    expect(() => loadConfig({ WORKER_DEPLOYMENT_NAME: 'a b' })).toThrow(/WORKER_DEPLOYMENT_NAME/);
  });
});

/** A typed fake of the two WorkflowService calls (the dev-server test runs the real ones). */
function fakeService(refusals: number, states: number[]): DeploymentService & { calls: number } {
  const service = {
    calls: 0,
    setWorkerDeploymentCurrentVersion: () => {
      service.calls++;
      if (service.calls <= refusals) return Promise.reject(new Error('version has no pollers yet'));
      return Promise.resolve({});
    },
    describeWorkerDeployment: () =>
      Promise.resolve({ workerDeploymentInfo: { routingConfigUpdateState: states.shift() ?? 2 } }),
  };
  return service;
}

describe('makeCurrentVersion', () => {
  it('asks again until the version is accepted, then waits for the routing to reach every task queue', async () => {
    const states = [1, 1, 2];
    const service = fakeService(2, states);
    await makeCurrentVersion(service, 'default', version, { intervalMs: 1 });
    expect(service.calls).toBe(3);
    expect(states).toEqual([]);
  });
  it('with a best-effort routing, says the routing is still on its way at its timeout instead of failing', async () => {
    const slow = Array.from({ length: 1_000 }, () => 1); // IN_PROGRESS for longer than the timeout
    await expect(
      makeCurrentVersion(fakeService(0, slow), 'default', version, {
        intervalMs: 1,
        timeoutMs: 20,
        routing: 'best-effort',
      }),
    ).resolves.toBe('propagating');
    await expect(
      makeCurrentVersion(fakeService(0, [1, 1, 2]), 'default', version, { intervalMs: 1, routing: 'best-effort' }),
    ).resolves.toBe('propagated');
    await expect(
      makeCurrentVersion(
        fakeService(
          0,
          Array.from({ length: 1_000 }, () => 1),
        ),
        'default',
        version,
        {
          intervalMs: 1,
          timeoutMs: 20,
        },
      ),
    ).rejects.toThrow(/is current, but its routing has not reached every task queue yet/);
  });
  it('gives up after its timeout, naming the version and the reason', async () => {
    await expect(
      makeCurrentVersion(fakeService(1_000, []), 'default', version, { intervalMs: 1, timeoutMs: 20 }),
    ).rejects.toThrow(/paylater\.wf-0123456789abcdef.*no pollers/);
  });
});

describe('bootstrapCurrentVersion: a fresh deployment serves without a deploy step, nothing more', () => {
  const service = (current: string | undefined, unversionedOpen: number) => {
    const calls: string[] = [];
    return {
      calls,
      setWorkerDeploymentCurrentVersion: (r: { buildId: string }) => {
        calls.push(`set ${r.buildId}`);
        return Promise.resolve({});
      },
      describeWorkerDeployment: () =>
        current === undefined && calls.length === 0
          ? Promise.reject(new Error('deployment not found'))
          : Promise.resolve({
              workerDeploymentInfo: {
                routingConfigUpdateState: 2,
                routingConfig: { currentDeploymentVersion: current ? { buildId: current } : null },
              },
            }),
      countWorkflowExecutions: () => Promise.resolve({ count: unversionedOpen }),
    };
  };
  it('makes the first build of a new deployment current', async () => {
    const s = service(undefined, 0);
    expect(await bootstrapCurrentVersion(s, 'default', version, 'paylater')).toBe('made-current');
    expect(s.calls).toEqual([`set ${version.buildId}`]);
  });
  it('never changes a current version (the deploy procedure does), and says whether it is this build', async () => {
    const other = service('wf-older', 0);
    expect(await bootstrapCurrentVersion(other, 'default', version, 'paylater')).toBe('another-is-current');
    const same = service(version.buildId, 0);
    expect(await bootstrapCurrentVersion(same, 'default', version, 'paylater')).toBe('is-current');
    expect([...other.calls, ...same.calls]).toEqual([]);
  });
  it('leaves the bridge deploy to the operator when runs from before Worker Versioning are open', async () => {
    const s = service(undefined, 3);
    expect(await bootstrapCurrentVersion(s, 'default', version, 'paylater')).toBe('unversioned-runs-open');
    expect(s.calls).toEqual([]);
  });
});
