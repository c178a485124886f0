import type { ServerResponse } from 'node:http';

/**
 * Writes a small JSON answer directly (no ETag or freshness work: webhook and error answers are never cached): the
 * receivers' answers and the error middleware's. A HEAD's answer gets the headers only (Node drops the body).
 */
export function sendJson(res: ServerResponse, status: number, body: unknown, mediaType = 'application/json'): void {
  const text = JSON.stringify(body);
  res.statusCode = status;
  res.setHeader('Content-Type', `${mediaType}; charset=utf-8`);
  res.setHeader('Content-Length', Buffer.byteLength(text));
  res.end(text);
}
