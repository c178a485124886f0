import { createServer } from 'node:net';

/**
 * Ports are chosen below the kernel's ephemeral range (32768–60999 on Linux), where outgoing connections take their
 * local ports: a port picked there and released can be taken by any client socket before its listener binds it
 * (CI once failed with "address already in use" on a port picked this way).
 */
const LOW = 20000;
const HIGH = 32767;

/**
 * The ports this process picked lately: released at once, so the next pick could be the same one, and a caller that
 * picks several for listeners it starts later (a test's PORT, INTERNAL_PORT, …) would give two of them one port.
 */
const handedOut = new Set<number>();
function remember(port: number): number {
  handedOut.add(port);
  if (handedOut.size > 1024) handedOut.delete(handedOut.values().next().value!);
  return port;
}

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
 * `avoid`: ports that are free now but about to be bound (a process's configured listeners, not yet started).
 */
export async function freeLoopbackPort(avoid: ReadonlySet<number> = new Set()): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const candidate = LOW + Math.floor(Math.random() * (HIGH - LOW + 1));
    if (avoid.has(candidate) || handedOut.has(candidate)) continue;
    const port = await tryListen(candidate);
    if (port !== undefined) return remember(port);
  }
  const port = await tryListen(0);
  if (port === undefined) throw new Error('No free loopback port');
  return remember(port);
}

/** The ports a process's environment configures (`PORT` and every `*_PORT`): its listeners', bound later. */
export function configuredPorts(env: Record<string, string | undefined>): Set<number> {
  const ports = new Set<number>();
  for (const [name, value] of Object.entries(env)) {
    if ((name === 'PORT' || name.endsWith('_PORT')) && value !== undefined && /^\d+$/.test(value.trim()))
      ports.add(Number(value));
  }
  return ports;
}
