#!/usr/bin/env node
// `npm test` and the other jest scripts (package.json): jest, so that stopping the npm process stops everything the
// run started, as `npm start` does (src/entry/run-entry.ts). The arguments are jest's (`npm test -- --json …`) and
// jest's exit code is this script's. Without `--selectProjects` it runs jest.config.js's `default` project (the
// suite), so `npm test` and CI's direct runs (.ci/run) never start the load, browser or conformance tests.
//
// Jest runs in a process group of its own, and every process the tests start (jest's workers, the Temporal dev and
// test servers, `npm start` and the stacks they spawn) is in it: none of them makes a group of its own. So:
// - SIGINT, SIGTERM or SIGHUP here (npm forwards the first two to this process, which its script `exec`s; `timeout`
//   and a terminal's Ctrl-C signal npm's whole process group, this process included) goes to that whole group, and
//   this process waits for the group to be empty, SIGKILLs what is left after GRACE_MS, then ends by the same signal;
// - npm gone without a word (SIGKILL): this process is reparented, notices it within half a second (the same poll as
//   src/entry/parent-watch.ts, which this plain script cannot import) and stops the group as for SIGTERM;
// - this process killed: jest's main process notices it the same way and kills its group
//   (test/setup/global-setup.ts, through PAYLATER_JEST_LAUNCHER_PID);
// - jest exiting on its own while processes of its group still run (a server a test leaked): they are named and
//   stopped the same way before this process exits.
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { constants } from 'node:os';

const GRACE_MS = 10_000;
const STOP_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'];
const require = createRequire(import.meta.url);
const log = (message) => process.stderr.write(`[scripts/jest.mjs] ${message}\n`);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** The live processes of group `pgid` (zombies left out), from /proc; undefined where there is no /proc. */
function members(pgid) {
  let names;
  try {
    names = readdirSync('/proc').filter((name) => /^\d+$/.test(name));
  } catch {
    return undefined;
  }
  const found = [];
  for (const name of names) {
    try {
      // The command name (field 2) may hold spaces: count the fields after its closing parenthesis.
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(pgrp) !== pgid || state === 'Z') continue;
      const args = readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0').join(' ').trim();
      found.push(`${name} ${args.slice(0, 120)}`);
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

function groupAlive(pgid) {
  const found = members(pgid);
  if (found) return found.length > 0;
  try {
    process.kill(-pgid, 0);
    return true;
  } catch (err) {
    return err.code === 'EPERM';
  }
}

function signalGroup(pgid, signal) {
  try {
    process.kill(-pgid, signal);
  } catch {
    // the group is gone
  }
}

/** `signal` to the group, then SIGKILL to what is left of it after GRACE_MS; resolves once it is empty. */
async function endGroup(pgid, signal) {
  signalGroup(pgid, signal);
  const deadline = Date.now() + GRACE_MS;
  while (groupAlive(pgid) && Date.now() < deadline) await sleep(100);
  if (!groupAlive(pgid)) return;
  log(`still running ${GRACE_MS / 1000} s after ${signal}, killed:\n  ${(members(pgid) ?? []).join('\n  ')}`);
  signalGroup(pgid, 'SIGKILL');
  const killDeadline = Date.now() + 5_000;
  while (groupAlive(pgid) && Date.now() < killDeadline) await sleep(100);
}

const args = process.argv.slice(2);
const selects = args.some((arg) => /^--(selectProjects|ignoreProjects)(=|$)/.test(arg));
const jest = spawn(
  process.execPath,
  // Last: `--selectProjects` takes every value up to the next option, test paths too.
  [require.resolve('jest/bin/jest'), ...args, ...(selects ? [] : ['--selectProjects', 'default'])],
  {
    stdio: 'inherit',
    // Node's detached is setsid(): a new session and process group, led by jest (its pid is the group's id).
    detached: true,
    env: { ...process.env, PAYLATER_JEST_LAUNCHER_PID: String(process.pid) },
  },
);
jest.once('error', (err) => {
  log(`could not start jest: ${err.message}`);
  process.exit(1);
});
const exited = new Promise((resolve) => jest.once('exit', (code, signal) => resolve({ code, signal })));
const group = jest.pid;

let stopping = false;

/** Stops the whole group, then ends this process by `signal` (as npm, a shell and `timeout` expect). */
async function stop(signal, why) {
  if (stopping) return;
  stopping = true;
  if (why) log(why);
  await endGroup(group, signal);
  await exited;
  for (const s of STOP_SIGNALS) process.removeAllListeners(s);
  process.kill(process.pid, signal);
}

// npm forwards SIGINT and SIGTERM, and `timeout` or a terminal signals npm's group too: a repeat changes nothing.
for (const signal of STOP_SIGNALS) process.on(signal, () => void stop(signal));

const parent = process.ppid;
const parentWatch = setInterval(() => {
  if (process.ppid === parent) return;
  clearInterval(parentWatch);
  void stop('SIGTERM', `the process that started this run (pid ${parent}) is gone: stopping jest`);
}, 500);
parentWatch.unref();

void exited.then(async ({ code, signal }) => {
  if (stopping) return;
  stopping = true;
  const left = members(group);
  if (groupAlive(group)) {
    log(`jest exited; stopping what its tests left running:\n  ${(left ?? [`process group ${group}`]).join('\n  ')}`);
    await endGroup(group, 'SIGTERM');
  }
  process.exit(code ?? 128 + (constants.signals[signal] ?? 0));
});
