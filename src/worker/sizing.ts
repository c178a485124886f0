import { readFileSync } from 'node:fs';

/**
 * How many workflows a worker keeps in memory, from the memory it may use. The SDK sizes its cache by count (from the
 * heap limit, about 600 per GiB), and a worker's memory grows with its cache, so a count that suits one machine runs a
 * smaller container out of memory on a burst. Plain code: the caller passes what it read (test/worker/sizing.test.ts).
 */

const MiB = 1024 * 1024;

/**
 * Measured on one worker holding 10,000 open finance applications, all woken once (`npm run bench -- worker-memory`,
 * docs/benchmarks.md "Workflow cache"): peak RSS 689 MiB with 500 cached, 995 MiB with 1,000, 1,261 MiB with 2,310.
 * The steepest step, 0.6 MiB per cached workflow, is the cost used here; what a worker holds with none cached (the
 * bundle, the SDK's threads, the connections) is taken as 400 MiB.
 */
export const CACHED_WORKFLOW_BYTES = 0.6 * MiB;
export const WORKER_BASE_BYTES = 400 * MiB;
/** The share of the limit the worker plans to use: the rest is headroom for garbage and bursts of activities. */
export const PLANNED_SHARE = 0.75;
/** With no limit known: the figure that keeps a worker under 1 GiB whatever the machine (docs/benchmarks.md). */
export const DEFAULT_CACHED_WORKFLOWS = 500;
/** A cap on the derived size: more is a choice to make in WORKER_MAX_CACHED_WORKFLOWS, not a default. */
export const MAX_DERIVED_CACHED_WORKFLOWS = 10_000;

export interface MemoryLimit {
  bytes: number;
  /** Where it came from, for the start-up log. */
  from: 'WORKER_MEMORY_LIMIT' | 'cgroup' | '--max-old-space-size';
}

export interface CacheSize {
  size: number;
  /** Why this size, in words (logged at start). */
  reason: string;
}

/**
 * The cache for a memory limit: what is left of the planned share after the worker's base, at the measured cost of
 * one cached workflow; never below `minimum` (each running workflow task holds a cached workflow) nor 2 (core's
 * floor), never above MAX_DERIVED_CACHED_WORKFLOWS. No limit known: DEFAULT_CACHED_WORKFLOWS.
 */
export function cacheSizeFor(limit: MemoryLimit | undefined, minimum: number): CacheSize {
  const floor = Math.max(2, minimum);
  if (!limit) {
    return {
      size: Math.max(floor, DEFAULT_CACHED_WORKFLOWS),
      reason: 'no memory limit known (WORKER_MEMORY_LIMIT, a cgroup limit, --max-old-space-size): the default',
    };
  }
  const derived = Math.floor((limit.bytes * PLANNED_SHARE - WORKER_BASE_BYTES) / CACHED_WORKFLOW_BYTES);
  const size = Math.min(MAX_DERIVED_CACHED_WORKFLOWS, Math.max(floor, derived));
  const mib = Math.round(limit.bytes / MiB);
  return {
    size,
    reason:
      `${mib} MiB from ${limit.from}: ${Math.round(PLANNED_SHARE * 100)} % of it, less ${WORKER_BASE_BYTES / MiB} MiB, ` +
      `at ${CACHED_WORKFLOW_BYTES / MiB} MiB per cached workflow` +
      (size !== derived ? ` (${derived} bounded to ${size})` : ''),
  };
}

/** What the process can read of its limits (injected in tests). */
export interface LimitSources {
  /** WORKER_MEMORY_LIMIT, in bytes. */
  configured?: number;
  /** A file's text, or undefined when it cannot be read. */
  readText?: (path: string) => string | undefined;
  /** process.execArgv and NODE_OPTIONS, where --max-old-space-size may be. */
  execArgv?: readonly string[];
  nodeOptions?: string;
}

/** Above this a cgroup v1 limit is "none" (the kernel writes a page-rounded 2^63 - 1). */
const NO_CGROUP_V1_LIMIT = 2 ** 60;

/**
 * The smallest of the memory limits the process runs under: WORKER_MEMORY_LIMIT; the container's cgroup limit
 * (v2 `memory.max`, v1 `memory.limit_in_bytes`); the V8 heap cap (`--max-old-space-size`, which every isolate of the
 * process gets, the workflow threads' too). Undefined when none is set.
 */
export function memoryLimit(sources: LimitSources = {}): MemoryLimit | undefined {
  const read = sources.readText ?? readIfThere;
  const found: MemoryLimit[] = [];
  if (sources.configured !== undefined) found.push({ bytes: sources.configured, from: 'WORKER_MEMORY_LIMIT' });
  const v2 = read('/sys/fs/cgroup/memory.max')?.trim();
  const v1 = read('/sys/fs/cgroup/memory/memory.limit_in_bytes')?.trim();
  for (const text of [v2, v1]) {
    if (text === undefined || !/^\d+$/.test(text)) continue; // "max": no limit
    const bytes = Number(text);
    if (bytes > 0 && bytes < NO_CGROUP_V1_LIMIT) found.push({ bytes, from: 'cgroup' });
  }
  const flags = [
    ...(sources.execArgv ?? process.execArgv),
    ...(sources.nodeOptions ?? process.env.NODE_OPTIONS ?? '').split(/\s+/),
  ];
  for (const flag of flags) {
    const m = /^--max[-_]old[-_]space[-_]size=(\d+)$/.exec(flag);
    if (m) found.push({ bytes: Number(m[1]) * MiB, from: '--max-old-space-size' });
  }
  return found.reduce<MemoryLimit | undefined>(
    (min, l) => (min === undefined || l.bytes < min.bytes ? l : min),
    undefined,
  );
}

function readIfThere(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

/** The cache a worker runs with: WORKER_MAX_CACHED_WORKFLOWS when set, else from the memory limit it finds. */
export function resolveCacheSize(
  tuning: { maxCachedWorkflows?: number; memoryLimitBytes?: number; maxConcurrentWorkflowTaskExecutions: number },
  sources: Omit<LimitSources, 'configured'> = {},
): CacheSize & { limit: MemoryLimit | undefined } {
  const limit = memoryLimit({ ...sources, configured: tuning.memoryLimitBytes });
  if (tuning.maxCachedWorkflows !== undefined)
    return { size: tuning.maxCachedWorkflows, reason: 'WORKER_MAX_CACHED_WORKFLOWS', limit };
  return { ...cacheSizeFor(limit, tuning.maxConcurrentWorkflowTaskExecutions), limit };
}
