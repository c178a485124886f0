#!/usr/bin/env node
// The image's HEALTHCHECK (Dockerfile). One image runs three processes (docker-compose.yml: the worker, the API, the
// bank sandbox), so this finds which one runs (the container's main process, /proc/1/cmdline, or another process
// running a dist entry point when PID 1 is an init) and probes that one's own route, on the port its variables set:
//   worker   dist/worker.js          http://127.0.0.1:$WORKER_METRICS_PORT/readyz (9464; src/worker/metrics.ts)
//   api      dist/api/server.js      http://127.0.0.1:$INTERNAL_PORT/readyz (3001; src/api/resources/health/routes.ts)
//   main     dist/main.js            as the API (npm start's internal listener)
//   sandbox  dist/sandbox/server.js  http://127.0.0.1:$SANDBOX_PORT/_sandbox (4010; src/sandbox/routes/control.ts)
// A process name as the first argument skips the detection (`node scripts/healthcheck.cjs worker`). Exit 0: 2xx.
// Node only, no dependency: it runs in the image, where node_modules has no development packages.
'use strict';
const { readFileSync, readdirSync } = require('node:fs');

const ENTRIES = {
  'dist/worker.js': 'worker',
  'dist/api/server.js': 'api',
  'dist/main.js': 'main',
  'dist/sandbox/server.js': 'sandbox',
};

/** The process a command line runs (its arguments, NUL-split /proc/<pid>/cmdline), or undefined. */
function processOf(args) {
  for (const arg of args) {
    const normalized = arg.replace(/^\.\//, '').replace(/^\/app\//, '');
    if (ENTRIES[normalized]) return ENTRIES[normalized];
  }
  return undefined;
}

/** The first of the command lines (PID 1's first) that runs a known entry point. */
function detectProcess(cmdlines) {
  for (const args of cmdlines) {
    const found = processOf(args);
    if (found) return found;
  }
  return undefined;
}

/** Where to probe: a wildcard or unset listening address is probed on the loopback. */
function hostOf(value) {
  if (!value || value === '0.0.0.0' || value === '::' || value === '[::]') return '127.0.0.1';
  return value.includes(':') && !value.startsWith('[') ? `[${value}]` : value;
}

/** The URL to probe for `name` under `env` (the container's environment), or an error message. */
function probeUrl(name, env) {
  const at = (hostVar, portVar, defaultPort, path) => {
    const port = env[portVar] || String(defaultPort);
    if (!/^\d+$/.test(port) || Number(port) === 0)
      return { error: `${portVar}=${port}: no fixed port to probe (set a port, or probe with the route)` };
    return { url: `http://${hostOf(env[hostVar])}:${port}${path}` };
  };
  switch (name) {
    case 'worker':
      return at('WORKER_METRICS_HOST', 'WORKER_METRICS_PORT', 9464, '/readyz');
    case 'api':
    case 'main':
      return at('INTERNAL_HOST', 'INTERNAL_PORT', 3001, '/readyz');
    case 'sandbox':
      return at('SANDBOX_HOST', 'SANDBOX_PORT', 4010, '/_sandbox');
    default:
      return { error: `unknown process ${JSON.stringify(name)} (worker, api, main or sandbox)` };
  }
}

/** PID 1's command line, then every other process's (in PID order). */
function readCmdlines() {
  const read = (pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
    } catch {
      return [];
    }
  };
  const pids = readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d) && d !== '1' && Number(d) !== process.pid)
    .sort((a, b) => Number(a) - Number(b));
  return [read(1), ...pids.map(read)];
}

async function main() {
  const name = process.argv[2] || detectProcess(readCmdlines());
  if (!name) throw new Error(`no process of this image found (${Object.keys(ENTRIES).join(', ')})`);
  const probe = probeUrl(name, process.env);
  if (probe.error) throw new Error(probe.error);
  const res = await fetch(probe.url, { signal: AbortSignal.timeout(4000) });
  await res.arrayBuffer();
  if (!res.ok) throw new Error(`${name}: ${probe.url} answered ${res.status}`);
}

if (require.main === module) {
  main().then(
    () => process.exit(0),
    (err) => {
      const cause = err && err.cause && err.cause.code ? ` (${err.cause.code})` : '';
      process.stderr.write(`healthcheck: ${err instanceof Error ? err.message : String(err)}${cause}\n`);
      process.exit(1);
    },
  );
}

module.exports = { detectProcess, probeUrl, processOf };
