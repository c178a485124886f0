import type { IncomingMessage } from 'node:http';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import type { Readable } from 'node:stream';
import express, { type RequestHandler } from 'express';
import { HttpError } from './problem-details';

/**
 * The webhook routes' body handling, kept to what they need on their hot path: one read of the raw bytes
 * (bounded), one JSON.parse, then the route's zod schema. Same answers as express.json for the bank's
 * requests: 413 past the limit (declared or streamed), 400 for bytes that are not JSON, 415 for a charset or
 * content encoding it cannot read; gzip, deflate and br bodies are inflated (the limit applies inflated). Every JSON
 * body, the facade's too (jsonBody), is refused with a 400 when nested deeper than MAX_JSON_DEPTH.
 */

/** `application/json` or `application/<something>+json`, parameters ignored (what `req.is()` accepted). */
export function hasJsonContentType(req: IncomingMessage, plusJson = true): boolean {
  return isJsonMediaType(req.headers['content-type'], plusJson);
}

function isJsonMediaType(header: string | undefined, plusJson = true): boolean {
  if (!header) return false;
  const semi = header.indexOf(';');
  const type = (semi === -1 ? header : header.slice(0, semi)).trim().toLowerCase();
  if (type === 'application/json') return true;
  return plusJson && type.startsWith('application/') && type.endsWith('+json') && !type.includes('/', 12);
}

/**
 * Why a Content-Type is not one the receivers read, or undefined when it is: a JSON media type (see
 * hasJsonContentType) with any parameters, and if a charset is named, UTF-8 (JSON is UTF-8: RFC 8259).
 */
export function jsonContentTypeProblem(header: string | undefined): string | undefined {
  if (!isJsonMediaType(header)) return 'Content-Type must be application/json';
  return charsetProblem(header);
}

/** A charset parameter other than UTF-8 (any case, quoted or not, named once or more), or undefined. */
function charsetProblem(header: string | undefined): string | undefined {
  if (!header) return undefined;
  for (const param of header.split(';').slice(1)) {
    const eq = param.indexOf('=');
    if (eq === -1 || param.slice(0, eq).trim().toLowerCase() !== 'charset') continue;
    const charset = param
      .slice(eq + 1)
      .trim()
      .replace(/^"(.*)"$/, '$1')
      .toLowerCase();
    if (charset !== 'utf-8' && charset !== 'utf8') {
      const shown = charset.length > 32 ? `${charset.slice(0, 32)}…` : charset;
      return `Unsupported charset "${shown}": send UTF-8 JSON`;
    }
  }
  return undefined;
}

/**
 * Deepest nesting of arrays and objects any JSON body may have. A validator walks nested values recursively (zod's
 * `z.json()` for the bank's fields of a create): about 1,500 levels overflowed its stack, a 500. No body of the
 * bank's or the facade's comes near this.
 */
export const MAX_JSON_DEPTH = 64;

/** A body nested deeper than MAX_JSON_DEPTH: refused before it is parsed. */
export class JsonTooDeepError extends HttpError {
  constructor() {
    super(400, `Malformed JSON body: nested deeper than ${MAX_JSON_DEPTH} levels of arrays and objects`);
  }
}

/**
 * Whether the JSON text in `body` (UTF-8, which no multi-byte character can confuse) opens more than `max` arrays and
 * objects at once, outside strings. One pass over the bytes, no allocation: it runs before JSON.parse, so a body too
 * deep (or not JSON at all) costs no parse and no recursion.
 */
export function jsonTooDeep(body: Uint8Array, max = MAX_JSON_DEPTH): boolean {
  let depth = 0;
  let inString = false;
  let escaped = false;
  for (let i = 0; i < body.length; i++) {
    const c = body[i];
    if (inString) {
      if (escaped) escaped = false;
      else if (c === 0x5c)
        escaped = true; // backslash
      else if (c === 0x22) inString = false; // quote
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true; // [ {
    } else if (c === 0x5d || c === 0x7d) depth--; // ] }
  }
  return false;
}

/**
 * The facade's JSON body parser: express.json with `limit`, and a body nested deeper than MAX_JSON_DEPTH refused with
 * a 400 problem before it is parsed (body-parser's `verify` runs on the decoded bytes).
 */
export function jsonBody(options: { limit: string }): RequestHandler {
  return express.json({
    limit: options.limit,
    verify: (_req, _res, body) => {
      if (jsonTooDeep(body)) throw new JsonTooDeepError();
    },
  });
}

export class BodyTooLargeError extends HttpError {
  constructor() {
    super(413, 'Request body too large');
  }
}

/** Reads the whole body (at most `limitBytes` once decoded) and parses it as JSON. */
export async function readJsonBody(req: IncomingMessage, limitBytes: number): Promise<unknown> {
  const unsupported = charsetProblem(req.headers['content-type']);
  if (unsupported) {
    await drain(req);
    throw new HttpError(415, unsupported);
  }
  const declared = Number(req.headers['content-length']);
  if (declared > limitBytes) {
    await drain(req);
    throw new BodyTooLargeError();
  }
  const source = decoded(req);
  if (!source) {
    await drain(req);
    throw new HttpError(415, `Unsupported Content-Encoding "${req.headers['content-encoding']}"`);
  }
  const raw = await readBounded(source, req, limitBytes);
  if (jsonTooDeep(raw)) throw new JsonTooDeepError();
  const text = raw.toString('utf8');
  try {
    return JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
  } catch {
    throw new HttpError(400, 'Malformed JSON body');
  }
}

function decoded(req: IncomingMessage): Readable | undefined {
  const encoding = (req.headers['content-encoding']?.trim() || 'identity').toLowerCase();
  switch (encoding) {
    case 'identity':
      return req;
    case 'gzip':
    case 'x-gzip':
      return req.pipe(createGunzip());
    case 'deflate':
      return req.pipe(createInflate());
    case 'br':
      return req.pipe(createBrotliDecompress());
    default:
      return undefined;
  }
}

function readBounded(source: Readable, req: IncomingMessage, limitBytes: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = false;
    let settled = false;
    const settle = (err?: Error) => {
      if (settled) return;
      settled = true;
      source.off('data', onData);
      if (err) reject(err instanceof HttpError ? err : new HttpError(400, `Unreadable body: ${err.message}`));
      else if (tooLarge) reject(new BodyTooLargeError());
      else resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limitBytes) {
        chunks.push(chunk);
        return;
      }
      // Past the limit: drop what was read, read the rest off the socket, answer 413 once the request ended.
      tooLarge = true;
      chunks.length = 0;
      source.off('data', onData);
      if (source !== req) {
        req.unpipe();
        source.destroy();
        if (req.readableEnded) return settle(); // a small compressed body may be read already
        req.once('end', () => settle());
      }
      req.resume();
    };
    source.on('data', onData);
    source.once('end', () => settle());
    source.once('error', (err) => {
      if (tooLarge) return;
      if (source === req) return settle(err);
      // Undecodable (not gzip, deflate or br after all): the rest of the body is still on the socket. Read it off
      // before answering, or a kept-alive connection would carry it into the next request (and be reset).
      source.off('data', onData);
      req.unpipe();
      void drain(req).then(() => settle(err));
    });
    if (source !== req) req.once('error', (err) => settle(err));
    req.once('close', () => {
      if (!req.complete) settle(new HttpError(400, 'Request aborted'));
    });
  });
}

function drain(req: IncomingMessage): Promise<void> {
  if (req.readableEnded || req.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    req.once('end', resolve);
    req.once('close', resolve);
    req.resume();
  });
}
