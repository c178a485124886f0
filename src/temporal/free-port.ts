import { createServer } from 'node:net';

/**
 * Ports are chosen below the kernel's ephemeral range (32768–60999 on Linux), where outgoing connections take their
 * local ports: a port picked there and released can be taken by any client socket before its listener binds it
 * (CI once failed with "address already in use" on a port picked this way).
 */
const LOW = 20000;
const HIGH = 32767;

function tryListen(port: number): Promise<number | undefined> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(undefined));
    server.listen(port, '127.0.0.1', () => {
      const { port: bound } = server.address() as { port: number };
      server.close(() => resolve(bound));
    });
  });
}

/**
 * A port free on the loopback interface now (bound, read, released): for a listener that cannot report the port it
 * bound itself (the Runtime's Prometheus exporter), and for the tests, benches and tools that start processes.
 */
export async function freeLoopbackPort(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = await tryListen(LOW + Math.floor(Math.random() * (HIGH - LOW + 1)));
    if (port !== undefined) return port;
  }
  const port = await tryListen(0);
  if (port === undefined) throw new Error('No free loopback port');
  return port;
}
