import { join, relative } from 'node:path';
import { loadMainConfig, type MainConfig } from '../config/main';
import { findTemporalCli, projectRoot } from '../temporal/binaries';
import { spawnDevServer, type DevServerProcess } from '../temporal/dev-server-process';

/**
 * Imported by src/main.ts after the configuration's modules and before the heavy ones (the Temporal SDK, Express, the
 * worker): with no TEMPORAL_ADDRESS the embedded dev server is spawned here, so it boots (about 1.6 s) while the rest
 * of the process loads (about 1.5 s) instead of after it (docs/decisions/0033-npm-start-loads-while-temporal-boots.md).
 * main.ts waits for it to answer (src/temporal/dev-server.ts devServerReady) and owns it from then on; until then the
 * process's exit kills it (src/temporal/dev-server-process.ts). An invalid configuration or a missing CLI spawns
 * nothing: runEntry and main.ts report those as before.
 */
export interface EarlyStart {
  /** The configuration read here, reused by runEntry (read once: it may generate development keys). */
  config?: MainConfig;
  devServer?: DevServerProcess;
}

function earlyStart(): EarlyStart {
  let config: MainConfig;
  try {
    config = loadMainConfig(process.env);
  } catch {
    return {};
  }
  if (config.temporal.address) return { config };
  const cliPath = findTemporalCli(config.env);
  if (!cliPath) return { config };
  const devServer = spawnDevServer(devServerProcessOptions(config, cliPath));
  // A signal while the modules load (before runEntry has its handlers) would end the process without its 'exit'
  // event, leaving the server running: until then a signal stops it and exits as the signal would.
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    const onSignal = () => void devServer.stop().finally(() => process.exit(signal === 'SIGINT' ? 130 : 143));
    process.once(signal, onSignal);
    earlySignalHandlers.push([signal, onSignal]);
  }
  return { config, devServer };
}

const earlySignalHandlers: [NodeJS.Signals, () => void][] = [];

/** Called by main.ts just before runEntry installs its own shutdown on SIGINT and SIGTERM. */
export function releaseEarlySignals(): void {
  for (const [signal, handler] of earlySignalHandlers.splice(0)) process.removeListener(signal, handler);
}

/**
 * The port of the embedded Web UI's codec gateway (src/api/ui-codec-gateway.ts), when it has one: with the embedded dev
 * server and the public development payload key. With PAYLOAD_ENCRYPTION_KEYS set the UI gets no codec endpoint and
 * shows payloads encrypted (an endpoint that refused it would show none); the CLI decodes with an operator key.
 */
export function uiCodecGatewayPort(config: MainConfig): number | undefined {
  const embedded = !config.temporal.address;
  return embedded && config.payloadEncryption.developmentKey ? config.temporal.devServer.uiCodecPort : undefined;
}

/** The embedded dev server's settings, from the configuration. */
export function devServerProcessOptions(config: MainConfig, cliPath: string) {
  const gateway = uiCodecGatewayPort(config);
  return {
    cliPath,
    port: config.temporal.devServer.port,
    uiPort: config.temporal.devServer.uiPort,
    dataDir: config.temporal.devServer.dataDir,
    cwd: projectRoot(),
    namespace: config.temporal.namespace,
    // The Web UI decodes payloads through its codec gateway on 127.0.0.1 (/codec itself takes operator keys only).
    uiCodecEndpoint: gateway === undefined ? undefined : `http://localhost:${gateway}/codec`,
  };
}

/** Only when the process is `npm start` itself (dist/main.js): importing main.ts elsewhere spawns nothing. */
const isMain =
  require.main !== undefined &&
  relative(join(__dirname, '..'), require.main.filename)
    .replace(/\\/g, '/')
    .replace(/\.[jt]s$/, '') === 'main';
export const early: EarlyStart = isMain ? earlyStart() : {};
