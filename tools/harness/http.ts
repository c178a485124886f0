import { request, type Agent, type IncomingHttpHeaders } from 'node:http';

export interface RawAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
  /** The client's local port: which connection carried the request. */
  socket: number;
}

/**
 * One POST with `node:http` to a listener on 127.0.0.1, headers exactly as given (no fetch defaults), the whole
 * answer read. An `agent` with keep-alive sends it on a kept connection.
 */
export function postRaw(options: {
  port: number;
  path: string;
  headers: Record<string, string>;
  body: Buffer | string;
  agent?: Agent;
}): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: options.port,
        method: 'POST',
        path: options.path,
        agent: options.agent,
        headers: options.headers,
      },
      (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString('utf8')));
        res.on('end', () =>
          resolve({
            status: res.statusCode!,
            headers: res.headers,
            text,
            socket: (req.socket as { localPort?: number } | null)?.localPort ?? 0,
          }),
        );
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}
