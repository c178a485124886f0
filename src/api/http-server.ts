import type { Server } from 'node:http';
import type { Express } from 'express';

/**
 * Listens and resolves once bound (port 0 picks a free port; see server.address()). `variable` names the setting
 * to change when the port is taken.
 */
export function listen(app: Express, port: number, host?: string, variable = 'PORT'): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = app.listen(port, host ?? '0.0.0.0');
    server.once('listening', () => resolve(server));
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(err.code === 'EADDRINUSE' ? new Error(`port ${port} is already in use (set ${variable})`) : err),
    );
    // Slow-loris guard; the bank's webhook bodies are tiny.
    server.headersTimeout = 15_000;
    server.requestTimeout = 30_000;
  });
}

export function boundPort(server: Server): number {
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error('server is not listening on a TCP port');
  return address.port;
}

/** Stops accepting, lets in-flight requests finish for up to `graceMs`, then drops what is left. */
export function closeServer(server: Server, graceMs = 5_000): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => server.closeAllConnections(), graceMs);
    server.close(() => {
      clearTimeout(timer);
      resolve();
    });
    server.closeIdleConnections();
  });
}
