#!/usr/bin/env node
// The package mirror of these machines serves only linux-x64 builds of packages with per-platform binaries
// (@swc/core-*, @unrs/resolver-binding-*), so npm leaves the other platforms' optional entries out of
// package-lock.json, and `npm ci` then refuses the lockfile. This adds those entries back, marked optional
// with their os/cpu, as npm writes them where the registry is complete. Run it after changing dependencies.
import { readFileSync, writeFileSync } from 'node:fs';

const OS = ['darwin', 'win32', 'linux', 'android', 'freebsd', 'openharmony', 'netbsd', 'openbsd', 'sunos', 'aix'];
const CPU = {
  x64: 'x64',
  arm64: 'arm64',
  arm: 'arm',
  ia32: 'ia32',
  ppc64: 'ppc64',
  s390x: 's390x',
  riscv64: 'riscv64',
  loong64: 'loong64',
};

const path = new URL('../package-lock.json', import.meta.url);
const lock = JSON.parse(readFileSync(path, 'utf8'));
let added = 0;
for (const [, entry] of Object.entries(lock.packages)) {
  for (const [name, range] of Object.entries(entry.optionalDependencies ?? {})) {
    const key = `node_modules/${name}`;
    if (lock.packages[key] || !/^\d+\.\d+\.\d+/.test(range)) continue;
    const parts = name.split('/').pop().split('-');
    const os = parts.find((p) => OS.includes(p));
    const cpu = parts.map((p) => CPU[p]).find(Boolean);
    if (!os || !cpu) continue;
    const libc =
      parts.includes('musl') || parts.includes('musleabihf') ? ['musl'] : os === 'linux' ? ['glibc'] : undefined;
    lock.packages[key] = { version: range, optional: true, os: [os], cpu: [cpu], ...(libc ? { libc } : {}) };
    added++;
  }
}
lock.packages = Object.fromEntries(
  Object.entries(lock.packages).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a.localeCompare(b))),
);
writeFileSync(path, `${JSON.stringify(lock, null, 2)}\n`);
process.stderr.write(`complete-lockfile: added ${added} optional platform entries\n`);
