import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createSandboxApp } from './app';
import type { SandboxControl, SandboxOptions } from './types';

export { createSandboxApp } from './app';
export { deriveConsent } from './consents';
export { activationTime } from './clock';
export type * from './types';

export interface RunningSandbox {
  /** `http://host:port`, no trailing slash: both BANK_AUTH_URL and BANK_BASE_URL. */
  url: string;
  control: SandboxControl;
  close(): Promise<void>;
}

/** Starts the sandbox on real HTTP; default 127.0.0.1 on a free port (port 0). */
export async function startSandbox(
  options: SandboxOptions,
  listen: { port?: number; host?: string } = {},
): Promise<RunningSandbox> {
  const sandbox = createSandboxApp(options);
  const { app, control } = sandbox;
  const host = listen.host ?? '127.0.0.1';
  const server = createServer(app);
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(listen.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const urlHost = host.includes(':') ? `[${host}]` : host === '0.0.0.0' ? '127.0.0.1' : host;
  let closing: Promise<void> | undefined;
  return {
    url: `http://${urlHost}:${port}`,
    control,
    close: () =>
      (closing ??= new Promise<void>((resolve) => {
        sandbox.stop();
        server.close(() => resolve());
        server.closeAllConnections();
      })),
  };
}
