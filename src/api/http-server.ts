import {
  createServer,
  IncomingMessage,
  ServerResponse,
  STATUS_CODES,
  type RequestListener,
  type Server,
  type ServerOptions,
} from 'node:http';
import type { Duplex } from 'node:stream';

/** An Express app's prototypes of its requests and responses (`app.request`, `app.response`). */
export interface MessagePrototypes {
  request: object;
  response: object;
}

/**
 * Listens and resolves once bound (port 0 picks a free port; see server.address()). `variable` names the setting
 * to change when the port is taken. `prototypes`: the Express app behind `app` (found on `app` itself when it is
 * one), whose requests and responses are then created with its prototypes (messageClasses).
 */
export function listen(
  app: RequestListener,
  port: number,
  host?: string,
  variable = 'PORT',
  prototypes: MessagePrototypes | undefined = prototypesOf(app),
): Promise<Server> {
  return new Promise((resolve, reject) => {
    const options: ServerOptions = prototypes ? messageClasses(prototypes) : {};
    const server = createServer(options, app).listen(port, host ?? '0.0.0.0');
    server.once('listening', () => resolve(server));
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(err.code === 'EADDRINUSE' ? new Error(`port ${port} is already in use (set ${variable})`) : err),
    );
    // Slow-loris guard; the bank's webhook bodies are tiny.
    server.headersTimeout = 15_000;
    server.requestTimeout = 30_000;
    server.on('clientError', answerUnparsable);
  });
}

function prototypesOf(app: RequestListener): MessagePrototypes | undefined {
  const { request, response } = app as Partial<MessagePrototypes>;
  return typeof request === 'object' && typeof response === 'object' ? { request, response } : undefined;
}

/**
 * Request and response classes whose instances are born with an Express app's prototypes. Express sets them on
 * every request it handles (`Object.setPrototypeOf(req, app.request)`, the same for `res`); changing the prototype of
 * a live object moves it to a new hidden class, and Node's own HTTP code then meets its messages in two shapes. That
 * was about half of what Express added to a webhook's CPU (docs/benchmarks.md, "The receiver"); with the prototype
 * already in place Express's call changes nothing. Express still handles every request as before.
 */
export function messageClasses(
  prototypes: MessagePrototypes,
): Pick<ServerOptions, 'IncomingMessage' | 'ServerResponse'> {
  function Request(socket: unknown): IncomingMessage {
    return Reflect.construct(IncomingMessage, [socket], Request) as IncomingMessage;
  }
  Request.prototype = prototypes.request;
  function Response(req: IncomingMessage, options?: unknown): ServerResponse {
    return Reflect.construct(ServerResponse, [req, options], Response) as ServerResponse;
  }
  Response.prototype = prototypes.response;
  return {
    IncomingMessage: Request as unknown as typeof IncomingMessage,
    ServerResponse: Response as unknown as typeof ServerResponse,
  };
}

/** How long a connection refused at parse time keeps reading (and dropping) what its client is still sending. */
const LINGER_MS = 2_000;

const PARSE_ERROR_ANSWERS: Record<string, number> = { HPE_HEADER_OVERFLOW: 431, HPE_CHUNK_EXTENSIONS_OVERFLOW: 413 };
const lingering = new WeakSet<Duplex>();

/**
 * A request Node's parser refuses (headers past `maxHeaderSize`, malformed framing) is answered here instead of by
 * Node's default, which writes the answer and destroys the socket at once. Destroying a socket whose client is still
 * sending (a large body behind oversized headers) makes the kernel reset the connection, and the client reads
 * `ECONNRESET` instead of the answer. So: the answer (status line only, as Node's: the method is unknown, and the
 * answer to a HEAD must carry no body; `Connection: close`), then a
 * lingering close as web servers do: our side is shut for writing, what still arrives is read and dropped (the
 * refused parser consumes it), and the socket is destroyed when the client closes or after LINGER_MS. A timed-out
 * request (slow loris), a socket error and a request whose body's framing broke after the app took it get no
 * lingering.
 */
function answerUnparsable(err: Error & { code?: string }, socket: Duplex): void {
  if (lingering.has(socket)) return; // every further chunk fails the same parser: already answered
  if (!socket.writable || err.code === 'ECONNRESET' || err.code === 'EPIPE') {
    socket.destroy();
    return;
  }
  // A request already handed to the app (the error is in its body's framing) may still be answered by its route: as
  // Node does, a short answer if nothing was written yet, and the connection goes at once, the route's answer with it.
  const inFlight = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (inFlight) {
    if (!inFlight.headersSent) socket.write(errorAnswer(400));
    socket.destroy();
    return;
  }
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    socket.end(errorAnswer(408));
    setTimeout(() => socket.destroy(), LINGER_MS).unref();
    return;
  }
  lingering.add(socket);
  socket.end(errorAnswer(PARSE_ERROR_ANSWERS[err.code ?? ''] ?? 400));
  socket.once('end', () => socket.destroy());
  setTimeout(() => socket.destroy(), LINGER_MS).unref();
}

function errorAnswer(status: number): string {
  return `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`;
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
