/**
 * `npm run sandbox`: the bank sandbox alone (dist/sandbox/server.js). Configured by SANDBOX_* variables
 * (config.ts); a bad value stops start-up with a message naming the variable. SIGINT/SIGTERM close gracefully.
 */
// First: .env in the working directory (src/entry/load-env-file.ts).
import '../entry/supported-node';
import '../entry/load-env-file';
import pino from 'pino';
import { loadSandboxConfig, SandboxConfigError } from './config';
import { startSandbox, type RunningSandbox } from './index';

export interface MainDeps {
  env: NodeJS.ProcessEnv;
  /** Where a configuration error is written (default process.stderr). */
  stderr?: { write(text: string): unknown };
  /** Listen for SIGINT/SIGTERM (default true; tests turn it off). */
  handleSignals?: boolean;
}

/** Starts the sandbox; resolves with it, or with null after writing why the configuration is invalid. */
export async function main(deps: MainDeps): Promise<RunningSandbox | null> {
  const stderr = deps.stderr ?? process.stderr;
  let config;
  try {
    config = loadSandboxConfig(deps.env);
  } catch (err) {
    if (err instanceof SandboxConfigError) {
      stderr.write(`${err.message}\n`);
      return null;
    }
    throw err;
  }
  const logger = pino({ level: config.logLevel, base: { service: 'bank-sandbox' } });
  const sandbox = await startSandbox({ ...config.options, logger }, { port: config.port, host: config.host });
  // Client id only: the secret and tokens are never logged.
  logger.info(
    {
      url: sandbox.url,
      clientId: config.options.clientId,
      accountWebhookActiveFrom: sandbox.control.accountWebhookActiveFrom(),
    },
    'bank sandbox listening',
  );
  if (deps.handleSignals !== false) {
    const shutdown = (signal: NodeJS.Signals): void => {
      logger.info({ signal }, 'bank sandbox closing');
      void sandbox.close().then(() => logger.info('bank sandbox closed'));
    };
    process.once('SIGINT', shutdown);
    process.once('SIGTERM', shutdown);
  }
  return sandbox;
}

if (require.main === module) {
  main({ env: process.env }).then(
    (sandbox) => {
      if (!sandbox) process.exitCode = 1;
    },
    (err: unknown) => {
      process.stderr.write(`bank sandbox failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exitCode = 1;
    },
  );
}
