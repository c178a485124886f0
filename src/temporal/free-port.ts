import { createServer } from 'node:net';

/**
 * A port free on the loopback interface now (bound to 0, read, released): for a listener that cannot report the port
 * it bound itself (the Runtime's Prometheus exporter), and for the tests, benches and tools that start processes.
 */
export function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}
