import '../entry/supported-node';
import '../entry/load-env-file';
import { spawn } from 'node:child_process';
import { loadMainConfig } from '../config/main';
import { ConfigError } from '../config';
import { findTemporalCli, MISSING_BINARY_HELP } from '../temporal/binaries';

/**
 * `npm run temporal -- <arguments>`: the pinned Temporal CLI (.temporal/bin/temporal, scripts/temporal-toolchain.mjs)
 * against the stack `npm start` runs, with the same configuration (environment and .env): the address (the embedded
 * dev server, or TEMPORAL_ADDRESS), the namespace, and the codec endpoint on the internal listener with an operator
 * key, so payloads are shown decrypted. All through the CLI's environment variables (TEMPORAL_ADDRESS,
 * TEMPORAL_NAMESPACE, TEMPORAL_CODEC_ENDPOINT, TEMPORAL_CODEC_AUTH): the key goes in the codec request's
 * Authorization header, never in a URL or on the command line (where `ps` shows it). Variables already set win.
 */
function main(): void {
  let config;
  try {
    config = loadMainConfig(process.env);
  } catch (err) {
    process.stderr.write(`temporal: ${(err as Error).message}\n`);
    process.exit(err instanceof ConfigError ? 78 : 1);
  }
  const cli = findTemporalCli(config.env);
  if (!cli) {
    process.stderr.write(`temporal: no Temporal CLI. ${MISSING_BINARY_HELP}\n`);
    process.exit(1);
  }
  const operatorKey = config.operatorApiKeys.keys[0]?.key;
  const filled: Record<string, string | undefined> = {
    TEMPORAL_ADDRESS: config.temporal.address ?? `127.0.0.1:${config.temporal.devServer.port}`,
    TEMPORAL_NAMESPACE: config.temporal.namespace,
    TEMPORAL_CODEC_ENDPOINT: `http://localhost:${config.internalPort}/codec`,
    TEMPORAL_CODEC_AUTH: operatorKey ? `Bearer ${operatorKey}` : undefined,
  };
  const env = { ...process.env };
  for (const [name, value] of Object.entries(filled)) if (value !== undefined && !env[name]) env[name] = value;
  const child = spawn(cli, process.argv.slice(2), { stdio: 'inherit', env });
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => child.kill(signal));
  child.on('exit', (code, signal) => process.exit(code ?? (signal ? 128 + 15 : 1)));
}

main();
