import {
  CACHED_WORKFLOW_BYTES,
  DEFAULT_CACHED_WORKFLOWS,
  MAX_DERIVED_CACHED_WORKFLOWS,
  cacheSizeFor,
  memoryLimit,
  resolveCacheSize,
} from '../../src/worker/sizing';

/** The worker's cache from the memory it may use (src/worker/sizing.ts). */
const MiB = 2 ** 20;
const files =
  (entries: Record<string, string>) =>
  (path: string): string | undefined =>
    entries[path];
const none = { readText: files({}), execArgv: [], nodeOptions: '' };

describe('the memory limit a worker runs under', () => {
  it('is none on a machine with no cgroup limit, no heap cap and nothing configured', () => {
    expect(memoryLimit(none)).toBeUndefined();
    // cgroup v2 "max" and v1's page-rounded 2^63 - 1 both mean none.
    expect(
      memoryLimit({
        ...none,
        readText: files({
          '/sys/fs/cgroup/memory.max': 'max\n',
          '/sys/fs/cgroup/memory/memory.limit_in_bytes': '9223372036854771712\n',
        }),
      }),
    ).toBeUndefined();
  });

  it("is the container's cgroup limit (v2 or v1)", () => {
    expect(memoryLimit({ ...none, readText: files({ '/sys/fs/cgroup/memory.max': `${1024 * MiB}\n` }) })).toEqual({
      bytes: 1024 * MiB,
      from: 'cgroup',
    });
    expect(
      memoryLimit({ ...none, readText: files({ '/sys/fs/cgroup/memory/memory.limit_in_bytes': `${512 * MiB}\n` }) }),
    ).toEqual({ bytes: 512 * MiB, from: 'cgroup' });
  });

  it('is the heap cap from the flags or NODE_OPTIONS, and the smallest of all when several are set', () => {
    expect(memoryLimit({ ...none, execArgv: ['--max-old-space-size=768'] })).toEqual({
      bytes: 768 * MiB,
      from: '--max-old-space-size',
    });
    expect(memoryLimit({ ...none, nodeOptions: '--enable-source-maps --max_old_space_size=256' })?.bytes).toBe(
      256 * MiB,
    );
    expect(
      memoryLimit({
        configured: 2048 * MiB,
        readText: files({ '/sys/fs/cgroup/memory.max': `${1024 * MiB}` }),
        execArgv: ['--max-old-space-size=1536'],
        nodeOptions: '',
      }),
    ).toEqual({ bytes: 1024 * MiB, from: 'cgroup' });
    expect(memoryLimit({ ...none, configured: 900 * MiB })).toEqual({ bytes: 900 * MiB, from: 'WORKER_MEMORY_LIMIT' });
  });
});

describe('the cache for a memory limit', () => {
  it('is the default with no limit known, never below the workflow task slots', () => {
    expect(cacheSizeFor(undefined, 40).size).toBe(DEFAULT_CACHED_WORKFLOWS);
    expect(cacheSizeFor(undefined, 800).size).toBe(800);
  });

  it('grows with the limit at the measured cost per cached workflow, with headroom', () => {
    const at = (mib: number) => cacheSizeFor({ bytes: mib * MiB, from: 'cgroup' }, 40).size;
    expect(at(768)).toBe(293); // (576 - 400) MiB / 0.6 MiB
    expect(at(1024)).toBe(613);
    expect(at(2048)).toBe(1893);
    // What it plans to use stays within the planned share of the limit.
    for (const mib of [768, 1024, 2048, 4096])
      expect(400 * MiB + at(mib) * CACHED_WORKFLOW_BYTES).toBeLessThanOrEqual(0.75 * mib * MiB);
  });

  it('keeps a cached workflow for every workflow task slot on a small limit, and caps a huge one', () => {
    expect(cacheSizeFor({ bytes: 256 * MiB, from: '--max-old-space-size' }, 40)).toMatchObject({ size: 40 });
    expect(cacheSizeFor({ bytes: 256 * MiB, from: '--max-old-space-size' }, 40).reason).toContain('bounded to 40');
    expect(cacheSizeFor({ bytes: 64 * 1024 * MiB, from: 'cgroup' }, 40).size).toBe(MAX_DERIVED_CACHED_WORKFLOWS);
  });

  it('says where its figure came from, and takes WORKER_MAX_CACHED_WORKFLOWS over any limit', () => {
    expect(cacheSizeFor({ bytes: 1024 * MiB, from: 'WORKER_MEMORY_LIMIT' }, 40).reason).toMatch(
      /^1024 MiB from WORKER_MEMORY_LIMIT: 75 % of it, less 400 MiB, at 0.6 MiB per cached workflow$/,
    );
    expect(
      resolveCacheSize(
        { maxCachedWorkflows: 0, memoryLimitBytes: 1024 * MiB, maxConcurrentWorkflowTaskExecutions: 40 },
        none,
      ),
    ).toMatchObject({ size: 0, reason: 'WORKER_MAX_CACHED_WORKFLOWS' });
    expect(
      resolveCacheSize(
        { maxCachedWorkflows: undefined, memoryLimitBytes: 1024 * MiB, maxConcurrentWorkflowTaskExecutions: 40 },
        none,
      ),
    ).toMatchObject({ size: 613, limit: { from: 'WORKER_MEMORY_LIMIT' } });
  });
});
