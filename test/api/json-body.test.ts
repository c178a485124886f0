/** The webhook routes' body reader on a bare HTTP server: the answers express.json gave, without its cost. */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { hardBound } from '../../src/api/deadlines';
import { NamespaceNotFoundError } from '@temporalio/common';
import { HttpError, isTemporalUnavailable } from '../../src/api/problem-details';
import { loggablePath } from '../../src/security/redaction';
import { hasJsonContentType, jsonTooDeep, MAX_JSON_DEPTH, readJsonBody } from '../../src/api/json-body';
import { sendJson } from '../../src/api/send-json';

const LIMIT = 1024;
type RequestBody = NonNullable<NonNullable<Parameters<typeof fetch>[1]>['body']>;

describe('webhook JSON body', () => {
  let server: Server;
  let url: string;
  beforeAll(async () => {
    server = createServer((req, res) => {
      readJsonBody(req, LIMIT).then(
        (body) => sendJson(res, 200, { body }),
        (err: unknown) => sendJson(res, err instanceof HttpError ? err.status : 500, { message: String(err) }),
      );
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  const post = async (body: RequestBody, headers: Record<string, string> = {}) => {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body,
      duplex: 'half', // needed for a streamed body
    });
    return { status: res.status, json: (await res.json()) as { body?: unknown } };
  };

  it('parses JSON, with or without a UTF-8 charset and a byte-order mark', async () => {
    expect(await post('{"a":"é"}')).toEqual({ status: 200, json: { body: { a: 'é' } } });
    expect((await post('{"a":1}', { 'content-type': 'application/json; charset=UTF-8' })).json.body).toEqual({ a: 1 });
    expect((await post('\ufeff{"a":1}')).json.body).toEqual({ a: 1 });
  });

  it('inflates gzip bodies', async () => {
    const res = await post(gzipSync('{"financeApplicationId":"x"}'), { 'content-encoding': 'gzip' });
    expect(res).toEqual({ status: 200, json: { body: { financeApplicationId: 'x' } } });
  });

  it('answers 400 to bytes that are not JSON, 415 to another charset or an unknown encoding', async () => {
    expect((await post('{"a":')).status).toBe(400);
    expect((await post('')).status).toBe(400);
    expect((await post('{}', { 'content-type': 'application/json; charset=latin1' })).status).toBe(415);
    expect((await post('{}', { 'content-encoding': 'compress' })).status).toBe(415);
    expect((await post('not gzip', { 'content-encoding': 'gzip' })).status).toBe(400);
  });

  it('answers 413 past the limit, declared or streamed (also inflated), and keeps serving', async () => {
    expect((await post(JSON.stringify({ pad: 'x'.repeat(LIMIT) }))).status).toBe(413);
    const chunk = new TextEncoder().encode(' '.repeat(400));
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent++ < 10) controller.enqueue(chunk);
        else controller.close();
      },
    });
    expect((await post(stream)).status).toBe(413);
    const bomb = gzipSync(JSON.stringify({ pad: 'x'.repeat(100 * LIMIT) }));
    expect(bomb.length).toBeLessThan(LIMIT);
    expect((await post(bomb, { 'content-encoding': 'gzip' })).status).toBe(413);
    expect((await post('{"after":true}')).json.body).toEqual({ after: true });
  });

  it('answers 400 to a body nested deeper than MAX_JSON_DEPTH, before parsing it (gzip too)', async () => {
    const nest = (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`;
    expect((await post(nest(MAX_JSON_DEPTH))).status).toBe(200);
    const deep = await post(nest(MAX_JSON_DEPTH + 1));
    expect(deep.status).toBe(400);
    expect(JSON.stringify(deep.json)).toContain(`nested deeper than ${MAX_JSON_DEPTH} levels`);
    expect((await post(gzipSync(`{"a":${nest(300)}}`), { 'content-encoding': 'gzip' })).status).toBe(400);
  });

  it('counts nesting outside strings only: brackets and escaped quotes in strings do not count', () => {
    const text = (s: string) => Buffer.from(s, 'utf8');
    expect(jsonTooDeep(text(`{"a":"${'['.repeat(500)}"}`))).toBe(false);
    expect(jsonTooDeep(text(String.raw`{"a":"\\","b":"["}`), 1)).toBe(false); // an escaped backslash ends no string
    expect(jsonTooDeep(text(String.raw`{"a":"\"[[[[\"","b":[[1]]}`), 2)).toBe(true);
    expect(jsonTooDeep(text(String.raw`{"a":"\"[[[[\"","b":[1]}`), 2)).toBe(false);
    expect(jsonTooDeep(text(`[{"é€😀":[{}]}]`), 4)).toBe(false);
    expect(jsonTooDeep(text(`[{"é€😀":[{}]}]`), 3)).toBe(true);
    expect(jsonTooDeep(text('[]'.repeat(10_000)), 1)).toBe(false); // siblings are not depth
  });

  it('recognises JSON content types as req.is() did', () => {
    const is = (type: string | undefined, plusJson?: boolean) =>
      hasJsonContentType({ headers: type === undefined ? {} : { 'content-type': type } } as never, plusJson);
    expect(is('application/json')).toBe(true);
    expect(is('Application/JSON ; charset=utf-8')).toBe(true);
    expect(is('application/vnd.bank+json')).toBe(true);
    expect(is('application/vnd.bank+json', false)).toBe(false);
    expect(is('text/plain')).toBe(false);
    expect(is('application/json-seq')).toBe(false);
    expect(is(undefined)).toBe(false);
  });
});

describe('loggablePath', () => {
  it('keeps the reference and replaces a finance webhook hash', () => {
    expect(loggablePath('/webhooks/finance-applications/order-1/abcDEF_123')).toBe(
      '/webhooks/finance-applications/order-1/:hash',
    );
    expect(loggablePath('/applications/order-1')).toBe('/applications/order-1');
  });
});

describe('hardBound', () => {
  it('answers 503 with Retry-After when a call outlives its bound, and passes results and errors through', async () => {
    const never = new Promise<never>(() => undefined);
    await expect(hardBound(never, 10, 'Temporal')).rejects.toMatchObject({
      status: 503,
      retryAfterSeconds: 5,
      message: 'Temporal did not answer within 10 ms; retry later',
    });
    await expect(hardBound(Promise.resolve('ok'), 1_000, 'x')).resolves.toBe('ok');
    await expect(hardBound(Promise.reject(new Error('boom')), 1_000, 'x')).rejects.toThrow('boom');
    expect(new HttpError(503, 'm')).toBeInstanceOf(Error);
  });
});

describe('isTemporalUnavailable', () => {
  it('takes a just-restarted server’s “namespace not found” for unavailable (503), not a workflow not found', () => {
    const grpc = (code: number, details: string) =>
      Object.assign(new Error(`${code} ${details}`), { code, details, metadata: {} });
    const restarted = new Error('Update-with-Start could not be executed', {
      cause: grpc(5, 'Namespace default is not found.'),
    });
    expect(isTemporalUnavailable(restarted)).toBe(true);
    // The client's NamespaceNotFoundError over the gRPC answer (an overloaded dev server, the burst bench).
    const wrapped = Object.assign(new NamespaceNotFoundError('default'), {
      cause: grpc(5, 'Update-with-Start could not be executed.'),
    });
    expect(isTemporalUnavailable(wrapped)).toBe(true);
  });

  it('takes the server’s own failures and a run whose workflow task keeps failing for unavailable (503)', () => {
    const grpc = (code: number, details: string) =>
      Object.assign(new Error(`${code} ${details}`), { code, details, metadata: {} });
    expect(isTemporalUnavailable(grpc(2, 'something went wrong, please retry (1b72822f)'))).toBe(true);
    expect(isTemporalUnavailable(grpc(13, 'internal'))).toBe(true);
    const query = new Error('Failed to query Workflow', {
      cause: grpc(9, 'Unable to query workflow due to Workflow Task in failed state.'),
    });
    expect(isTemporalUnavailable(query)).toBe(true);
    // The client's error of an update: a gRPC error whose details are empty, the reason in its message.
    expect(
      isTemporalUnavailable(
        Object.assign(new Error('Unable to perform workflow execution update due to Workflow Task in failed state.'), {
          code: 9,
          details: '',
          metadata: {},
        }),
      ),
    ).toBe(true);
    // The same without a gRPC error's shape.
    expect(
      isTemporalUnavailable(
        new Error('Unable to perform workflow execution update due to Workflow Task in failed state.'),
      ),
    ).toBe(true);
    expect(isTemporalUnavailable(grpc(9, 'workflow execution already completed'))).toBe(false);
    expect(isTemporalUnavailable(new Error('boom'))).toBe(false);
    expect(isTemporalUnavailable(grpc(5, 'workflow execution not found'))).toBe(false);
    expect(isTemporalUnavailable(grpc(14, 'connection refused'))).toBe(true);
  });
});
