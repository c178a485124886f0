/**
 * What the listeners answer to a request Node's HTTP parser refuses: a status line and a lingering close, so a client still sending (a large body behind oversized headers) reads the answer instead of a
 * connection reset. Raw TCP, so the order of events is fixed: the body is sent only after the answer arrived.
 */
import { connect, type Socket } from 'node:net';
import type { RequestListener, Server } from 'node:http';
import express from 'express';
import { boundPort, closeServer, listen } from '../../src/api/http-server';
import { eventually } from '../helpers/temporal';

let server: Server;
let port: number;

beforeAll(async () => {
  const app = express();
  app.post('/in', (req, res) => {
    req.resume();
    req.on('end', () => res.status(202).json({ accepted: true }));
  });
  server = await listen(app, 0, '127.0.0.1');
  port = boundPort(server);
});
afterAll(() => closeServer(server, 100));

/** A raw connection with everything it received so far, its end, and its errors. */
function rawConnection(
  allowHalfOpen = false,
): Promise<{ socket: Socket; received: () => string; ended: Promise<void>; errors: Error[] }> {
  return new Promise((resolve, reject) => {
    const socket = connect({ port, host: '127.0.0.1', allowHalfOpen });
    let text = '';
    const errors: Error[] = [];
    socket.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
    socket.on('error', (err) => errors.push(err));
    const ended = new Promise<void>((done) => socket.once('close', () => done()));
    socket.once('connect', () => resolve({ socket, received: () => text, ended, errors }));
    socket.once('error', reject);
  });
}

function write(socket: Socket, data: string | Buffer): Promise<void> {
  return new Promise((resolve, reject) => socket.write(data, (err) => (err ? reject(err) : resolve())));
}

describe('requests the HTTP parser refuses', () => {
  it('headers past the limit: 431, and the body still being sent is read off, not reset', async () => {
    const bodySize = 2 * 1024 * 1024;
    // Half-open allowed: a client that goes on sending after the server shut its side (as an HTTP client does).
    const conn = await rawConnection(true);
    await write(
      conn.socket,
      `POST /in HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${bodySize}\r\n` +
        `X-Padding: ${'p'.repeat(20_000)}\r\n\r\n`,
    );
    await eventually(() => conn.received().includes('\r\n\r\n') || undefined, 5_000, 10);
    // The answer is in; the client goes on sending its body, as one that writes before it reads would.
    const chunk = Buffer.alloc(64 * 1024, 0x61);
    for (let sent = 0; sent < bodySize; sent += chunk.length) await write(conn.socket, chunk);
    conn.socket.end();
    await conn.ended;

    expect(conn.errors).toEqual([]);
    const [head, body] = conn.received().split('\r\n\r\n');
    expect(head).toMatch(/^HTTP\/1\.1 431 /);
    expect(head).toMatch(/\r\nConnection: close(\r\n|$)/i);
    expect(head).toMatch(/\r\nContent-Length: 0(\r\n|$)/i);
    expect(body).toBe('');
  });

  it('malformed framing: 400, then the connection closes', async () => {
    const conn = await rawConnection();
    await write(conn.socket, 'POST /in HTTP/1.1\r\nHost: x\r\nContent-Length: ten\r\n\r\n0123456789');
    await eventually(() => conn.received().includes('\r\n\r\n') || undefined, 5_000, 10);
    const [head, body] = conn.received().split('\r\n\r\n');
    expect(head).toMatch(/^HTTP\/1\.1 400 /);
    expect(body).toBe('');
    // The server shut its side; a client that never closes is dropped after the linger time (or the test times out).
    await conn.ended;
  });

  it('a HEAD past the limit gets no body (a client reading one would fail on it)', async () => {
    const conn = await rawConnection();
    await write(conn.socket, `HEAD /in HTTP/1.1\r\nHost: x\r\nX-Padding: ${'p'.repeat(20_000)}\r\n\r\n`);
    await conn.ended;
    expect(conn.errors).toEqual([]);
    expect(conn.received()).toMatch(/^HTTP\/1\.1 431 [^\r]*\r\n(.+\r\n)*\r\n$/);
  });

  it('a kept-alive connection that sent a good request first still gets the refusal of its next one', async () => {
    const conn = await rawConnection();
    await write(
      conn.socket,
      'POST /in HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}',
    );
    await eventually(() => conn.received().includes('{"accepted":true}') || undefined, 5_000, 10);
    await write(conn.socket, `GET /in HTTP/1.1\r\nHost: x\r\nX-Padding: ${'p'.repeat(20_000)}\r\n\r\n`);
    await eventually(() => conn.received().includes('HTTP/1.1 431 ') || undefined, 5_000, 10);
    conn.socket.end();
    await conn.ended;
    expect(conn.errors).toEqual([]);
    expect(conn.received()).toMatch(/^HTTP\/1\.1 202 [\s\S]*HTTP\/1\.1 431 /);
  });
});

describe("an Express app's requests", () => {
  it('are created with its prototypes when listen is given the app (Express then has none to change)', async () => {
    const app = express();
    app.get('/p', (req, res) => res.json({ path: req.path }));
    const seen: boolean[] = [];
    // A wrapper as the drain's (src/api/drain.ts): it hides the app, so listen is told which app it is.
    const wrapped: RequestListener = (req, res) => {
      seen.push(Object.getPrototypeOf(req) === app.request && Object.getPrototypeOf(res) === app.response);
      app(req, res);
    };
    for (const prototypes of [app, undefined]) {
      const s = await listen(wrapped, 0, '127.0.0.1', 'PORT', prototypes);
      try {
        const answer = await fetch(`http://127.0.0.1:${boundPort(s)}/p`);
        expect(answer.status).toBe(200);
        expect(await answer.json()).toEqual({ path: '/p' });
      } finally {
        await closeServer(s, 100);
      }
    }
    expect(seen).toEqual([true, false]);
  });
});
