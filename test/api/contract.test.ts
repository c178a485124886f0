/**
 * The merchant HTTP contract on the whole stack (docs/problems.md, docs/decisions/0038-reference-reuse-conflict.md,
 * docs/decisions/0039-problem-details-and-unknown-parameters.md): a table of bad requests per merchant route, each
 * answered as an RFC 9457 problem whose status the document describes for that route and whose `type` is the one
 * for its failure; an unknown query parameter or body field refused on every route; 409 for a reference reused with
 * another body, 200 for the same body; `Location` on every 201 (and the refresh's 202). Every answer is also
 * checked against the OpenAPI document as it goes out (stack.openApi).
 */
import { randomUUID } from 'node:crypto';
import { answerProblems } from '../../tools/harness/openapi';
import { PROBLEM_CONTENT_TYPE, ProblemType, type ProblemBody } from '../../src/api/problem-details';
import { startTestStack, type TestStack } from '../helpers/stack';

/** One bad request and the problem it must get. */
interface BadRequest {
  name: string;
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  path: string;
  /** The document's path template (for the status check). */
  template: string;
  body?: string;
  headers?: Record<string, string>;
  /** No Authorization header. */
  anonymous?: boolean;
  status: number;
  type: string;
  /** Each must appear in `detail` (the field, and what is allowed). */
  detailHas?: (string | RegExp)[];
  /** The `errors` entries' fields, in order. */
  fields?: string[];
}

const JSON_TYPE = { 'content-type': 'application/json' };
const ref = () => `contract-${randomUUID().slice(0, 8)}`;
const start = (merchantReference: string, more: Record<string, unknown> = {}) =>
  JSON.stringify({ merchantReference, redirectUrl: 'https://shop.example/done', ...more });

describe('the merchant HTTP contract (whole stack)', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(() => stack?.close());
  afterEach(() => stack.openApi.expectAllMatched());

  /** Sends a request as the merchant (or anonymously) and returns the answer with its problem body. */
  async function send(request: Omit<BadRequest, 'name' | 'status' | 'type' | 'template'>) {
    const init: RequestInit = { method: request.method, headers: request.headers, body: request.body };
    const res = request.anonymous
      ? await fetch(`${stack.internalUrl}${request.path}`, init)
      : await stack.facade(request.path, init);
    const text = await res.text();
    return { res, text };
  }

  const consent = `consent-${randomUUID().slice(0, 8)}`;
  const table: BadRequest[] = [
    // Every route: no key, an unknown query parameter.
    ...(
      [
        ['GET', '/applications', '/applications'],
        ['POST', '/applications', '/applications'],
        ['GET', '/applications/order-1', '/applications/{ref}'],
        ['POST', `/consents/${consent}/refresh`, '/consents/{consentId}/refresh'],
        ['GET', `/consents/${consent}/refresh`, '/consents/{consentId}/refresh'],
        ['PUT', `/consents/${consent}`, '/consents/{consentId}'],
        ['GET', `/consents/${consent}`, '/consents/{consentId}'],
        ['DELETE', `/consents/${consent}`, '/consents/{consentId}'],
        ['GET', '/merchant/callback-signing-secret', '/merchant/callback-signing-secret'],
        ['POST', '/merchant/callback-signing-secret/rotate', '/merchant/callback-signing-secret/rotate'],
      ] as const
    ).flatMap(([method, path, template]): BadRequest[] => {
      const body = method === 'POST' && template === '/applications' ? start(ref()) : undefined;
      const headers = body ? JSON_TYPE : undefined;
      return [
        {
          name: `${method} ${template} without a key`,
          method,
          path,
          template,
          anonymous: true,
          status: 401,
          type: ProblemType.Unauthorized,
        },
        {
          name: `${method} ${template} with an unknown query parameter`,
          method,
          path: `${path}?bogus=1`,
          template,
          body,
          headers,
          status: 400,
          type: ProblemType.Validation,
          detailHas: ['query parameter bogus: unknown parameter'],
          fields: ['bogus'],
        },
      ];
    }),
    // POST /applications: the body.
    {
      name: 'POST /applications with one of our fields in another case (not sent to the bank)',
      method: 'POST',
      path: '/applications',
      template: '/applications',
      headers: JSON_TYPE,
      body: start(ref(), { callbackURL: 'https://shop.example/hooks' }),
      status: 400,
      type: ProblemType.Validation,
      detailHas: ['body field callbackURL: unknown field; did you mean callbackUrl?'],
      fields: ['callbackURL'],
    },
    {
      name: 'POST /applications with a duration out of bounds',
      method: 'POST',
      path: '/applications',
      template: '/applications',
      headers: JSON_TYPE,
      body: start(ref(), { settings: { deadline: '2s' } }),
      status: 400,
      type: ProblemType.Validation,
      detailHas: ['body field settings.deadline', /"30s", "5m", "1h", "7d"/, 'between 1m and 365d'],
      fields: ['settings.deadline'],
    },
    {
      name: 'POST /applications with a duration that is no duration',
      method: 'POST',
      path: '/applications',
      template: '/applications',
      headers: JSON_TYPE,
      body: start(ref(), { settings: { fastPollInterval: 'soon' } }),
      status: 400,
      type: ProblemType.Validation,
      detailHas: ['body field settings.fastPollInterval: must be whole milliseconds', 'between 1s and 1h'],
      fields: ['settings.fastPollInterval'],
    },
    {
      name: 'POST /applications without redirectUrl, with a bad reference',
      method: 'POST',
      path: '/applications',
      template: '/applications',
      headers: JSON_TYPE,
      body: JSON.stringify({ merchantReference: 'a b' }),
      status: 400,
      type: ProblemType.Validation,
      detailHas: ['body field merchantReference: must be 1 to 128 letters', 'body field redirectUrl: is required'],
      fields: ['merchantReference', 'redirectUrl'],
    },
    {
      name: 'POST /applications with a bank field whose name is not a field name',
      method: 'POST',
      path: '/applications',
      template: '/applications',
      headers: JSON_TYPE,
      body: start(ref(), { 'amount value': 1 }),
      status: 400,
      type: ProblemType.Validation,
      fields: ['amount value'],
    },
    {
      name: 'POST /applications with a body that is not JSON',
      method: 'POST',
      path: '/applications',
      template: '/applications',
      headers: JSON_TYPE,
      body: '{"merchantReference":',
      status: 400,
      type: ProblemType.MalformedRequest,
    },
    {
      name: 'POST /applications as text',
      method: 'POST',
      path: '/applications',
      template: '/applications',
      headers: { 'content-type': 'text/plain' },
      body: start(ref()),
      status: 415,
      type: ProblemType.UnsupportedMediaType,
    },
    {
      name: 'POST /applications over 256 KiB',
      method: 'POST',
      path: '/applications',
      template: '/applications',
      headers: JSON_TYPE,
      body: start(ref(), { note: 'x'.repeat(300 * 1024) }),
      status: 413,
      type: ProblemType.PayloadTooLarge,
    },
    {
      name: 'POST /applications with a callbackUrl outside the allow-list',
      method: 'POST',
      path: '/applications',
      template: '/applications',
      headers: JSON_TYPE,
      body: start(ref(), { callbackUrl: 'https://elsewhere.example/hooks' }),
      status: 400,
      type: ProblemType.CallbackUrlRefused,
      detailHas: ['callbackUrl'],
    },
    // GET /applications and /applications/{ref}: the query and the path.
    {
      name: 'GET /applications with a page size over the maximum',
      method: 'GET',
      path: '/applications?pageSize=1000',
      template: '/applications',
      status: 400,
      type: ProblemType.Validation,
      fields: ['pageSize'],
    },
    {
      name: 'GET /applications/{ref} with a timeout over 60s',
      method: 'GET',
      path: '/applications/order-1?waitForChangeFrom=CREATED&timeout=61s',
      template: '/applications/{ref}',
      status: 400,
      type: ProblemType.Validation,
      detailHas: ['query parameter timeout: must be 1s to 60s, or 1ms to 60000ms'],
      fields: ['timeout'],
    },
    {
      name: 'GET /applications/{ref} with a timeout but no waitForChangeFrom',
      method: 'GET',
      path: '/applications/order-1?timeout=5s',
      template: '/applications/{ref}',
      status: 400,
      type: ProblemType.Validation,
      detailHas: ['query parameter timeout: needs waitForChangeFrom'],
    },
    {
      name: 'GET /applications/{ref} with a reference outside its pattern',
      method: 'GET',
      path: '/applications/a%20b',
      template: '/applications/{ref}',
      status: 400,
      type: ProblemType.Validation,
      detailHas: ['path parameter ref'],
      fields: ['ref'],
    },
    {
      name: 'GET /applications/{ref} with bad percent-encoding',
      method: 'GET',
      path: '/applications/%E0%A4%A',
      template: '/applications/{ref}',
      status: 400,
      type: ProblemType.MalformedRequest,
    },
    {
      name: 'GET /applications/{ref} of an unknown reference',
      method: 'GET',
      path: `/applications/${ref()}`,
      template: '/applications/{ref}',
      status: 404,
      type: ProblemType.NotFound,
    },
    // The callback signing secret: the stack's merchant signs with CALLBACK_SIGNING_SECRETS, set by the operator.
    {
      name: 'POST /merchant/callback-signing-secret/rotate with a grace period over 7 days',
      method: 'POST',
      path: '/merchant/callback-signing-secret/rotate',
      template: '/merchant/callback-signing-secret/rotate',
      headers: JSON_TYPE,
      body: JSON.stringify({ gracePeriod: '8d' }),
      status: 400,
      type: ProblemType.Validation,
      fields: ['gracePeriod'],
    },
    {
      name: 'POST /merchant/callback-signing-secret/rotate with a body that is not JSON',
      method: 'POST',
      path: '/merchant/callback-signing-secret/rotate',
      template: '/merchant/callback-signing-secret/rotate',
      headers: { 'content-type': 'text/plain' },
      body: 'rotate',
      status: 415,
      type: ProblemType.UnsupportedMediaType,
    },
    {
      name: 'POST /merchant/callback-signing-secret/rotate of a secret the operator sets',
      method: 'POST',
      path: '/merchant/callback-signing-secret/rotate',
      template: '/merchant/callback-signing-secret/rotate',
      status: 409,
      type: ProblemType.Conflict,
      detailHas: ['The operator sets'],
    },
    // Consents.
    {
      name: 'POST /consents/{consentId}/refresh with an invalid consentId',
      method: 'POST',
      path: '/consents/a%20b/refresh',
      template: '/consents/{consentId}/refresh',
      status: 400,
      type: ProblemType.Validation,
      detailHas: ['path parameter consentId: must be 1 to 128 letters'],
      fields: ['consentId'],
    },
    {
      name: 'POST /consents/{consentId}/refresh with a quiet period out of bounds',
      method: 'POST',
      path: `/consents/${consent}/refresh`,
      template: '/consents/{consentId}/refresh',
      headers: JSON_TYPE,
      body: JSON.stringify({ quietPeriod: '2d' }),
      status: 400,
      type: ProblemType.Validation,
      detailHas: ['body field quietPeriod', 'between 100ms and 1d'],
      fields: ['quietPeriod'],
    },
    {
      name: 'POST /consents/{consentId}/refresh with an unknown field',
      method: 'POST',
      path: `/consents/${consent}/refresh`,
      template: '/consents/{consentId}/refresh',
      headers: JSON_TYPE,
      body: JSON.stringify({ expectedBanks: ['A'] }),
      status: 400,
      type: ProblemType.Validation,
      detailHas: ['allowed: expectedBankCodes, timeout, quietPeriod'],
      fields: ['expectedBanks'],
    },
    {
      name: 'PUT /consents/{consentId} with a body',
      method: 'PUT',
      path: `/consents/${consent}`,
      template: '/consents/{consentId}',
      headers: JSON_TYPE,
      body: JSON.stringify({ owner: 'me' }),
      status: 400,
      type: ProblemType.Validation,
      detailHas: ['body field owner: unknown field: none is allowed'],
      fields: ['owner'],
    },
    {
      name: 'PUT /consents/{consentId} as text',
      method: 'PUT',
      path: `/consents/${consent}`,
      template: '/consents/{consentId}',
      headers: { 'content-type': 'text/plain' },
      body: 'claim',
      status: 415,
      type: ProblemType.UnsupportedMediaType,
    },
    {
      name: 'GET /consents/{consentId}/refresh never started',
      method: 'GET',
      path: `/consents/${consent}/refresh`,
      template: '/consents/{consentId}/refresh',
      status: 404,
      type: ProblemType.NotFound,
    },
    {
      name: 'GET /consents/{consentId} not claimed',
      method: 'GET',
      path: `/consents/${consent}`,
      template: '/consents/{consentId}',
      status: 404,
      type: ProblemType.NotFound,
    },
  ];

  test.each(table)('$name: $status, a problem of its type, described for the route', async (bad) => {
    const { res, text } = await send(bad);
    expect(res.status).toBe(bad.status);
    expect(res.headers.get('content-type')).toBe(`${PROBLEM_CONTENT_TYPE}; charset=utf-8`);
    const problem = JSON.parse(text) as ProblemBody;
    expect(problem).toMatchObject({ type: bad.type, status: bad.status, title: expect.any(String) });
    expect(problem.detail).toBe(problem.message);
    for (const part of bad.detailHas ?? []) expect(problem.detail).toMatch(part);
    if (bad.fields) expect(problem.errors?.map((e) => e.field)).toEqual(bad.fields);
    // The status is one the document gives this route, and the body matches that answer's schema.
    const answer = { method: bad.method, path: bad.path.split('?')[0]!, status: res.status, body: text };
    expect(
      answerProblems({ ...answer, contentType: res.headers.get('content-type') ?? undefined }, bad.template),
    ).toEqual([]);
  });

  test('a reference reused with another body is a 409; the same body (in any key order) the same application', async () => {
    const reference = ref();
    const body = {
      merchantReference: reference,
      redirectUrl: 'https://shop.example/done',
      amount: { value: 120, currency: 'EUR' },
      settings: { deadline: '7d' },
    };
    const created = await stack.facade('/applications', {
      method: 'POST',
      headers: JSON_TYPE,
      body: JSON.stringify(body),
    });
    expect(created.status).toBe(201);
    expect(created.headers.get('location')).toBe(`/applications/${reference}`);
    const application = (await created.json()) as { financeApplicationId: string };
    // Location names the application: following it reads it.
    const read = await stack.facade(created.headers.get('location')!);
    expect(read.status).toBe(200);
    expect(await read.json()).toMatchObject({ financeApplicationId: application.financeApplicationId });

    const reordered = JSON.stringify({
      settings: { deadline: 7 * 24 * 3_600_000 },
      amount: { currency: 'EUR', value: 120 },
      redirectUrl: 'https://shop.example/done',
      merchantReference: reference,
    });
    const again = await stack.facade('/applications', { method: 'POST', headers: JSON_TYPE, body: reordered });
    expect(again.status).toBe(200);
    expect(again.headers.get('location')).toBeNull();
    expect(await again.json()).toMatchObject({ financeApplicationId: application.financeApplicationId });
    // Settings left out are the operator's defaults: not compared (0038).
    const { settings: _settings, ...withoutSettings } = body;
    const defaults = await stack.facade('/applications', {
      method: 'POST',
      headers: JSON_TYPE,
      body: JSON.stringify(withoutSettings),
    });
    expect(defaults.status).toBe(200);

    for (const [changed, field] of [
      [{ ...body, redirectUrl: 'https://shop.example/other' }, 'redirectUrl'],
      [{ ...body, amount: { value: 121, currency: 'EUR' } }, 'amount'],
      [{ ...body, callbackUrl: 'http://127.0.0.1:9/hooks' }, 'callbackUrl'],
      [{ ...body, settings: { deadline: '8d' } }, 'settings.deadline'],
    ] as const) {
      const conflict = await stack.facade('/applications', {
        method: 'POST',
        headers: JSON_TYPE,
        body: JSON.stringify(changed),
      });
      const text = await conflict.text();
      expect(conflict.status).toBe(409);
      expect(conflict.headers.get('content-type')).toBe(`${PROBLEM_CONTENT_TYPE}; charset=utf-8`);
      const problem = JSON.parse(text) as ProblemBody;
      expect(problem).toMatchObject({ type: ProblemType.Conflict, status: 409 });
      expect(problem.errors?.map((e) => e.field)).toEqual([field]);
      expect(problem.detail).toContain(`merchantReference ${reference}`);
      const answer = { method: 'POST', path: '/applications', status: 409, body: text };
      expect(answerProblems({ ...answer, contentType: conflict.headers.get('content-type') ?? undefined })).toEqual([]);
    }
    // Nothing of the refused requests reached the bank: one application, created with the first body.
    const atBank = stack.sandbox.control.applications().filter((a) => a.createRequest.merchantReference === reference);
    expect(atBank).toHaveLength(1);
    expect(atBank[0]!.createRequest).toMatchObject({
      redirectUrl: 'https://shop.example/done',
      amount: { value: 120 },
    });
  });

  test.each([
    ['PATCH', '/applications', 'GET, HEAD, POST'],
    ['DELETE', '/applications/order-1', 'GET, HEAD'],
    ['POST', '/consents/c-1', 'PUT, GET, HEAD, DELETE'],
    ['PUT', '/consents/c-1/refresh', 'POST, GET, HEAD'],
  ])('%s %s: 405, a problem, with Allow: %s', async (method, path, allow) => {
    const res = await stack.facade(path, { method });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe(allow);
    expect(res.headers.get('content-type')).toBe(`${PROBLEM_CONTENT_TYPE}; charset=utf-8`);
    expect(await res.json()).toMatchObject({ type: ProblemType.MethodNotAllowed, status: 405 });
  });

  test('a consent claimed now and a refresh started answer with Location', async () => {
    const id = `consent-${randomUUID().slice(0, 8)}`;
    const claimed = await stack.facade(`/consents/${id}`, { method: 'PUT' });
    expect(claimed.status).toBe(201);
    expect(claimed.headers.get('location')).toBe(`/consents/${id}`);
    expect((await stack.facade(claimed.headers.get('location')!)).status).toBe(200);
    const refresh = await stack.facade(`/consents/${id}/refresh`, {
      method: 'POST',
      headers: JSON_TYPE,
      body: JSON.stringify({ timeout: '30s', quietPeriod: '500ms' }),
    });
    expect(refresh.status).toBe(202);
    expect(refresh.headers.get('location')).toBe(`/consents/${id}/refresh`);
    expect((await stack.facade(refresh.headers.get('location')!)).status).toBe(200);
  });
});
