/**
 * The security boundary on the whole stack (real dev server, the bank sandbox over HTTP, worker, both listeners):
 * the merchant facade only on the internal listener and only with a merchant API key; the public listener serves
 * the bank's webhooks and nothing of the facade; a rotated WEBHOOK_HASH_SECRET keeps older applications' webhooks.
 */
import { randomUUID } from 'node:crypto';
import { request } from 'node:http';
import { WorkflowNotFoundError } from '@temporalio/client';
import { tenantWebhookHash } from '../../src/security/webhook-hash';
import {
  consentClaimWorkflowId,
  consentRefreshWorkflowId,
  financeApplicationWorkflowId,
  merchantSecretsWorkflowId,
  webhookKey,
} from '../../src/shared/ids';
import { ProblemType } from '../../src/api/problem-details';
import { startTestStack, type TestStack } from '../helpers/stack';
import { eventually } from '../helpers/temporal';

const KEY_A = 'merchant-a-key-0123456789abcdefghij';
const KEY_B = 'merchant-b-key-0123456789abcdefghij';
const SECRET_OLD = 'old-webhook-hash-secret-0123456789abcdef';
const SECRET_NEW = 'new-webhook-hash-secret-0123456789abcdef';

describe('security boundary (whole stack, two listeners)', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack({
      hashSecret: SECRET_OLD,
      merchantApiKeys: [
        { name: 'boundary-a', key: KEY_A },
        { name: 'boundary-b', key: KEY_B },
      ],
    });
  });
  afterAll(async () => stack?.close());

  const json = { 'content-type': 'application/json' };
  const application = (merchantReference: string) =>
    JSON.stringify({ merchantReference, redirectUrl: 'https://shop.example/done' });
  /** No workflow with this id was ever started, and the bank never heard of the reference or consent. */
  const expectNothingStarted = async (workflowId: string, id: string) => {
    await expect(stack.t.client.workflow.getHandle(workflowId).describe()).rejects.toBeInstanceOf(
      WorkflowNotFoundError,
    );
    expect(stack.sandbox.control.applications().filter((a) => a.createRequest.merchantReference === id)).toEqual([]);
    expect(stack.sandbox.control.refreshTasks().filter((t) => t.consentId === id)).toEqual([]);
  };
  const authCount = async (merchant: string, outcome: string) =>
    (await stack.metrics.merchantAuth.get()).values.find(
      (v) => v.labels.merchant === merchant && v.labels.outcome === outcome,
    )?.value ?? 0;

  it.each([
    ['no Authorization', {}],
    ['a wrong key', { authorization: `Bearer ${KEY_A}x` }],
    ['a prefix of a key', { authorization: `Bearer ${KEY_A.slice(0, -1)}` }],
    ['another scheme', { authorization: `Basic ${KEY_A}` }],
    ['the bare key', { authorization: KEY_A }],
    ['an empty bearer', { authorization: 'Bearer ' }],
  ])('answers 401 to the facade with %s, and starts nothing', async (_case, auth: Record<string, string>) => {
    const ref = `noauth-${randomUUID()}`;
    const consentId = `noauth-${randomUUID()}`;
    const answers = [
      await fetch(`${stack.internalUrl}/applications`, {
        method: 'POST',
        headers: { ...json, ...auth },
        body: application(ref),
      }),
      await fetch(`${stack.internalUrl}/applications/${ref}`, { headers: auth }),
      await fetch(`${stack.internalUrl}/consents/${consentId}/refresh`, {
        method: 'POST',
        headers: { ...json, ...auth },
        body: '{}',
      }),
      await fetch(`${stack.internalUrl}/consents/${consentId}/refresh`, { headers: auth }),
      // The caller's callback signing secret: neither read nor rotated without its key.
      await fetch(`${stack.internalUrl}/merchant/callback-signing-secret`, { headers: auth }),
      await fetch(`${stack.internalUrl}/merchant/callback-signing-secret/rotate`, { method: 'POST', headers: auth }),
      // The caller's undelivered callbacks: neither listed nor sent again without its key.
      await fetch(`${stack.internalUrl}/callbacks/undelivered`, { headers: auth }),
      await fetch(`${stack.internalUrl}/callbacks/resend`, {
        method: 'POST',
        headers: { ...json, ...auth },
        body: JSON.stringify({ since: '2026-01-01T00:00:00Z', until: '2026-01-02T00:00:00Z' }),
      }),
      // Paths that are no route need the key too: a 404 would tell what exists.
      await fetch(`${stack.internalUrl}/merchant/anything`, { headers: auth }),
      await fetch(`${stack.internalUrl}/applications/${ref}/anything`, { headers: auth }),
    ];
    for (const res of answers) {
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toMatch(/^Bearer realm="paylater"/);
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(await res.json()).toMatchObject({
        type: ProblemType.Unauthorized,
        status: 401,
        error: 'unauthorized',
        message: expect.any(String),
      });
    }
    for (const merchant of ['boundary-a', 'boundary-b']) {
      await expectNothingStarted(financeApplicationWorkflowId(merchant, ref), ref);
      await expectNothingStarted(merchantSecretsWorkflowId(merchant), ref);
    }
    await expectNothingStarted(consentRefreshWorkflowId(consentId), consentId);
  });

  it("serves each merchant its own, counting the key by its name: another merchant's application is a 404", async () => {
    const ref = `auth-${randomUUID()}`;
    stack.sandbox.control.setApplicationScript({ steps: [] }, { merchantReference: ref });
    const before = await authCount('boundary-a', 'accepted');
    const created = await fetch(`${stack.internalUrl}/applications`, {
      method: 'POST',
      // The scheme is case-insensitive (RFC 7235).
      headers: { ...json, authorization: `bearer ${KEY_A}` },
      body: application(ref),
    });
    expect(created.status).toBe(201);
    const { financeApplicationId } = (await created.json()) as { financeApplicationId: string };
    const read = async (key: string) =>
      fetch(`${stack.internalUrl}/applications/${ref}`, { headers: { authorization: `Bearer ${key}` } });
    const own = await read(KEY_A);
    expect(own.status).toBe(200);
    expect(await own.json()).toMatchObject({ merchantReference: ref, financeApplicationId });
    // boundary-b asks for boundary-a's reference: the same answer as for a reference nobody used.
    const other = await read(KEY_B);
    expect(other.status).toBe(404);
    const unknown = await fetch(`${stack.internalUrl}/applications/never-${randomUUID()}`, {
      headers: { authorization: `Bearer ${KEY_B}` },
    });
    expect(unknown.status).toBe(404);
    const bodyOf = async (res: Response) => {
      const body = (await res.json()) as Record<string, unknown>;
      const redacted = (text: unknown) => String(text).replace(/ \S+$/, ' <ref>');
      return { ...body, message: redacted(body.message), detail: redacted(body.detail) };
    };
    expect(await bodyOf(other)).toEqual(await bodyOf(unknown));
    expect(await authCount('boundary-a', 'accepted')).toBe(before + 2); // the start and its own read
    expect(await authCount('boundary-b', 'accepted')).toBeGreaterThanOrEqual(1);
    // The metrics carry names, never keys.
    const metrics = await (
      await fetch(`${stack.internalUrl}/metrics`, { headers: { authorization: `Bearer ${stack.operatorKey}` } })
    ).text();
    expect(metrics).toMatch(/paylater_merchant_api_requests_total\{merchant="boundary-a",outcome="accepted"\} [1-9]/);
    expect(metrics).toMatch(/paylater_merchant_api_requests_total\{merchant="none",outcome="(missing|wrong)"\} [1-9]/);
    expect(metrics).not.toContain(KEY_A);
    // boundary-b reusing boundary-a's reference with another body is no conflict (nothing tells boundary-a's exists): its own 201.
    const theirs = await fetch(`${stack.internalUrl}/applications`, {
      method: 'POST',
      headers: { ...json, authorization: `Bearer ${KEY_B}` },
      body: JSON.stringify({ merchantReference: ref, redirectUrl: 'https://other-shop.example/back' }),
    });
    expect(theirs.status).toBe(201);
    expect(((await theirs.json()) as { financeApplicationId: string }).financeApplicationId).not.toBe(
      financeApplicationId,
    );
    for (const merchant of ['boundary-a', 'boundary-b'])
      await stack.t.client.workflow.getHandle(financeApplicationWorkflowId(merchant, ref)).terminate('test done');
  });

  it('refuses a revoked key (its entry removed) while the other merchant goes on', async () => {
    const refBefore = `revoke-before-${randomUUID()}`;
    stack.sandbox.control.setApplicationScript({ steps: [] }, { merchantReference: refBefore });
    const post = (key: string, ref: string) =>
      fetch(`${stack.internalUrl}/applications`, {
        method: 'POST',
        headers: { ...json, authorization: `Bearer ${key}` },
        body: application(ref),
      });
    expect((await post(KEY_B, refBefore)).status).toBe(201);

    stack.setMerchantApiKeys([{ name: 'boundary-a', key: KEY_A }]); // MERCHANT_API_KEYS without boundary-b's entry
    try {
      const refAfter = `revoke-after-${randomUUID()}`;
      const refused = await post(KEY_B, refAfter);
      expect(refused.status).toBe(401);
      expect(await refused.json()).toMatchObject({ error: 'unauthorized', message: 'Invalid API key' });
      await expectNothingStarted(financeApplicationWorkflowId('boundary-b', refAfter), refAfter);
      expect(
        (
          await fetch(`${stack.internalUrl}/applications/${refBefore}`, {
            headers: { authorization: `Bearer ${KEY_B}` },
          })
        ).status,
      ).toBe(401);
      expect(
        (
          await fetch(`${stack.internalUrl}/applications/${refBefore}`, {
            headers: { authorization: `Bearer ${KEY_A}` },
          })
        ).status,
      ).toBe(404); // boundary-b's application: boundary-a never sees it
    } finally {
      stack.setMerchantApiKeys([
        { name: 'boundary-a', key: KEY_A },
        { name: 'boundary-b', key: KEY_B },
      ]);
      await stack.t.client.workflow
        .getHandle(financeApplicationWorkflowId('boundary-b', refBefore))
        .terminate('test done');
    }
  });

  it("keeps /healthz and /readyz's status open on the internal listener (probes send no key); /metrics and readiness details are an operator's", async () => {
    expect((await fetch(`${stack.internalUrl}/healthz`)).status).toBe(200);
    const probe = await fetch(`${stack.internalUrl}/readyz`);
    expect(probe.status).toBe(200);
    expect(await probe.json()).toEqual({ status: 'ready' });
    const operator = { authorization: `Bearer ${stack.operatorKey}` };
    const detailed = await fetch(`${stack.internalUrl}/readyz`, { headers: operator });
    expect(await detailed.json()).toEqual({ status: 'ready', temporal: 'ok' });

    // Every merchant's name and request volume (boundary-b's here): never to a merchant, nor to anyone without a key.
    await fetch(`${stack.internalUrl}/applications/never-${randomUUID()}`, {
      headers: { authorization: `Bearer ${KEY_B}` },
    });
    for (const [headers, status] of [
      [{}, 401],
      // A merchant's key answers as an unknown one: nothing tells that it is a merchant's.
      [{ authorization: `Bearer ${KEY_A}` }, 401],
      [{ authorization: `Bearer ${KEY_A}x` }, 401],
      [{ authorization: `Basic ${stack.operatorKey}` }, 401],
    ] as [Record<string, string>, number][]) {
      const metrics = await fetch(`${stack.internalUrl}/metrics`, { headers });
      const text = await metrics.text();
      expect({ headers, status: metrics.status }).toEqual({ headers, status });
      expect(metrics.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(text).not.toContain('shop-');
      expect(text).not.toContain('paylater_');
      // Nor do the readiness details open to a key that is not an operator's (no key: the status alone, above).
      if (headers.authorization !== undefined)
        expect({ headers, status: (await fetch(`${stack.internalUrl}/readyz`, { headers })).status }).toEqual({
          headers,
          status,
        });
    }
    const scraped = await fetch(`${stack.internalUrl}/metrics`, { headers: operator });
    expect(scraped.status).toBe(200);
    expect(await scraped.text()).toMatch(/^paylater_merchant_api_requests_total\{merchant="boundary-b"/m);
  });

  it("answers the public listener's /readyz (its load balancer's probe) with the drain state only, nothing of Temporal", async () => {
    const res = await fetch(`${stack.publicUrl}/readyz`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: 'ready' });
  });

  it('answers 404 on the public listener to every merchant and operator route, with or without a key', async () => {
    const ref = `public-${randomUUID()}`;
    const consentId = `public-${randomUUID()}`;
    const routes: [string, string, string?][] = [
      ['POST', '/applications', application(ref)],
      ['GET', '/applications'],
      ['GET', `/applications/${ref}`],
      ['POST', `/consents/${consentId}/refresh`, '{}'],
      ['GET', `/consents/${consentId}/refresh`],
      ['GET', '/merchant/callback-signing-secret'],
      ['POST', '/merchant/callback-signing-secret/rotate', '{}'],
      ['GET', '/callbacks/undelivered'],
      ['POST', '/callbacks/resend', '{"since":"2026-01-01T00:00:00Z","until":"2026-01-02T00:00:00Z"}'],
      ['GET', '/operator/callbacks/undelivered'],
      ['GET', '/metrics'],
      ['POST', '/codec/decode', '{"payloads":[]}'],
      ['POST', '/codec/encode', '{"payloads":[]}'],
      ['PUT', `/operator/consents/${consentId}`, '{"merchantId":"boundary-a"}'],
      ['GET', '/openapi.json'],
      ['GET', '/docs'],
    ];
    for (const auth of [{}, { authorization: `Bearer ${KEY_A}` }] as Record<string, string>[]) {
      for (const [method, path, body] of routes) {
        const res = await fetch(`${stack.publicUrl}${path}`, { method, headers: { ...json, ...auth }, body });
        expect({ method, path, status: res.status }).toEqual({ method, path, status: 404 });
        expect(await res.json()).toMatchObject({ error: 'not_found' });
      }
    }
    await expectNothingStarted(financeApplicationWorkflowId('boundary-a', ref), ref);
    await expectNothingStarted(consentRefreshWorkflowId(consentId), consentId);
    await expectNothingStarted(consentClaimWorkflowId(consentId), consentId);
  });

  it('accepts, after WEBHOOK_HASH_SECRET is rotated, the webhooks of an application created before', async () => {
    const refOld = `rotate-old-${randomUUID()}`;
    const refNew = `rotate-new-${randomUUID()}`;
    for (const ref of [refOld, refNew])
      stack.sandbox.control.setApplicationScript({ steps: [] }, { merchantReference: ref });
    const create = async (ref: string) => {
      const res = await stack.facade('/applications', { method: 'POST', headers: json, body: application(ref) });
      expect(res.status).toBe(201);
      return ((await res.json()) as { financeApplicationId: string }).financeApplicationId;
    };
    const signals = async (ref: string) =>
      (
        (await stack.t.client.workflow.getHandle(financeApplicationWorkflowId('boundary-a', ref)).fetchHistory())
          .events ?? []
      ).filter((e) => e.workflowExecutionSignaledEventAttributes).length;
    /** The bank sends the application's status-change webhook to the webhookUrl it was given at creation. */
    const bankSends = async (id: string) => {
      const [delivery] = await stack.sandbox.control.sendApplicationWebhooks(id, 1);
      return delivery!.attempts[0]!.status;
    };

    const idOld = await create(refOld);
    expect(stack.sandbox.control.application(idOld)!.createRequest.webhookUrl).toMatch(
      new RegExp(`/boundary-a~${refOld}/${tenantWebhookHash(SECRET_OLD, 'boundary-a', refOld)}$`),
    );

    // The rotation: WEBHOOK_HASH_SECRET=new, WEBHOOK_HASH_SECRET_PREVIOUS=old (receiver and worker restarted).
    stack.setWebhooks({ hashSecret: SECRET_NEW, previousHashSecret: SECRET_OLD });
    try {
      const idNew = await create(refNew);
      // New applications get hashes from the new secret.
      expect(stack.sandbox.control.application(idNew)!.createRequest.webhookUrl).toMatch(
        new RegExp(`/${tenantWebhookHash(SECRET_NEW, 'boundary-a', refNew)}$`),
      );
      expect(await bankSends(idOld)).toBe(202);
      expect(await bankSends(idNew)).toBe(202);
      // The hash in the query form verifies under the previous secret too.
      const viaQuery = await fetch(
        `${stack.publicUrl}/webhooks/finance-applications/${webhookKey('boundary-a', refOld)}?hash=${tenantWebhookHash(SECRET_OLD, 'boundary-a', refOld)}`,
        { method: 'POST', headers: json, body: JSON.stringify({ financeApplicationId: idOld }) },
      );
      expect(viaQuery.status).toBe(202);
      // Neither secret makes a hash for another reference, and a third secret makes none.
      const forged = await fetch(
        `${stack.publicUrl}/webhooks/finance-applications/${webhookKey('boundary-a', refOld)}/${tenantWebhookHash('a-third-secret-0123456789abcdefghij', 'boundary-a', refOld)}`,
        { method: 'POST', headers: json, body: JSON.stringify({ financeApplicationId: idOld }) },
      );
      expect(forged.status).toBe(401);
      // Signals sent while a workflow task runs are written after it: wait for both, then require exactly two.
      await eventually(async () => ((await signals(refOld)) >= 2 ? true : undefined));
      expect(await signals(refOld)).toBe(2);

      // The rotation ends (WEBHOOK_HASH_SECRET_PREVIOUS removed): only new-secret hashes verify.
      stack.setWebhooks({ previousHashSecret: undefined });
      expect(await bankSends(idOld)).toBe(401);
      expect(await bankSends(idNew)).toBe(202);
      expect(await signals(refOld)).toBe(2);
    } finally {
      stack.setWebhooks({ hashSecret: SECRET_OLD, previousHashSecret: undefined });
      for (const ref of [refOld, refNew])
        await stack.t.client.workflow.getHandle(financeApplicationWorkflowId('boundary-a', ref)).terminate('test done');
    }
  });

  it('answers deeply nested JSON with a 400 problem, never a 500 (5,000 levels in a bank field, every JSON route)', async () => {
    const key = { authorization: `Bearer ${KEY_A}` };
    const ref = `deep-${randomUUID()}`;
    const deep = (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`;
    const bodies: [string, string, string, Record<string, string>, string][] = [
      // A bank field's value is any JSON: the validator would recurse 5,000 times.
      [
        stack.internalUrl,
        'POST',
        '/applications',
        key,
        `{"merchantReference":"${ref}","redirectUrl":"https://shop.example/done","basket":${deep(5_000)}}`,
      ],
      // Unbalanced, and not even JSON: refused before it is parsed.
      [stack.internalUrl, 'POST', '/applications', key, '['.repeat(5_000)],
      [
        stack.internalUrl,
        'POST',
        `/consents/deep-${randomUUID()}/refresh`,
        key,
        `{"expectedBankCodes":${deep(5_000)}}`,
      ],
      [stack.internalUrl, 'PUT', `/consents/deep-${randomUUID()}`, key, deep(400)],
      [stack.publicUrl, 'POST', '/webhooks/accounts', { authorization: stack.webhooks.securityHeader }, deep(5_000)],
    ];
    for (const [base, method, path, headers, body] of bodies) {
      const res = await fetch(`${base}${path}`, {
        method,
        headers: { 'content-type': 'application/json', ...headers },
        body,
      });
      const text = await res.text();
      expect({ method, path, status: res.status }).toEqual({ method, path, status: 400 });
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(JSON.parse(text)).toMatchObject({ status: 400, detail: expect.stringMatching(/nested deeper than 64/) });
      expect(text).not.toMatch(/RangeError|Maximum call stack| at /);
    }
    await expectNothingStarted(financeApplicationWorkflowId('boundary-a', ref), ref);
    // 64 levels are a bank field's business: accepted.
    const fine = await fetch(`${stack.internalUrl}/applications`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...key },
      body: `{"merchantReference":"${ref}","redirectUrl":"https://shop.example/done","basket":${deep(63)}}`,
    });
    expect(fine.status).toBe(201);
    await stack.t.client.workflow.getHandle(financeApplicationWorkflowId('boundary-a', ref)).terminate('test done');
  });

  it('answers malformed requests with 4xx, never 500: bad percent-encoding, HEAD, OPTIONS, huge headers', async () => {
    const raw = (port: string, method: string, path: string, headers: Record<string, string> = {}, body?: string) =>
      new Promise<number>((resolve, reject) => {
        const url = new URL(port);
        const req = request({ host: url.hostname, port: url.port, method, path, headers }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode!));
        });
        req.on('error', reject);
        req.end(body);
      });
    const hash = tenantWebhookHash(SECRET_OLD, 'boundary-a', 'order-1');
    const key = { authorization: `Bearer ${KEY_A}` };
    const cases: [string, string, string, Record<string, string>, string | undefined, number][] = [
      [stack.publicUrl, 'POST', `/webhooks/finance-applications/%E0%A4%A/${hash}`, json, '{}', 400],
      [stack.publicUrl, 'POST', `/webhooks/finance-applications/order-1/%E0%A4%A`, json, '{}', 400],
      [stack.publicUrl, 'POST', `/webhooks/finance-applications/order-1?hash=%E0%A4%A`, json, '{}', 401],
      [stack.publicUrl, 'POST', `/webhooks/%E0%A4%A`, json, '{}', 404],
      [stack.publicUrl, 'HEAD', `/webhooks/accounts`, {}, undefined, 405],
      [stack.publicUrl, 'GET', `/webhooks/finance-applications/order-1/${hash}`, {}, undefined, 405],
      [stack.internalUrl, 'GET', '/applications/%E0%A4%A', key, undefined, 400],
      [stack.internalUrl, 'GET', '/consents/%ZZ/refresh', key, undefined, 400],
      [stack.internalUrl, 'HEAD', '/applications/unknown-ref', key, undefined, 404],
      [
        stack.internalUrl,
        'POST',
        '/applications',
        { ...key, 'content-type': 'application/json; charset=latin1' },
        '{}',
        415,
      ],
      [
        stack.internalUrl,
        'POST',
        '/applications',
        { ...key, 'content-type': 'application/json', 'content-encoding': 'zip' },
        '{}',
        415,
      ],
      [
        stack.internalUrl,
        'POST',
        '/applications',
        { ...key, 'content-type': 'application/json', 'content-encoding': 'gzip' },
        '{}',
        400,
      ],
      [stack.internalUrl, 'POST', '/applications', { ...key, 'content-type': 'application/json' }, '{"a":', 400],
      [stack.internalUrl, 'POST', '/consents/c-1/refresh', { ...key, 'content-type': 'text/plain' }, 'x', 415],
      [stack.internalUrl, 'GET', '/readyz', { 'x-big': 'x'.repeat(20_000) }, undefined, 431],
      [stack.publicUrl, 'POST', '/webhooks/accounts', { 'x-big': 'x'.repeat(20_000) }, '{}', 431],
    ];
    for (const [base, method, path, headers, body, status] of cases) {
      expect({ method, path, status: await raw(base, method, path, headers, body) }).toEqual({ method, path, status });
    }
    // OPTIONS: answered (the router's Allow list, or 404/401), never a 5xx.
    for (const [base, path] of [
      [stack.publicUrl, '/webhooks/accounts'],
      [stack.internalUrl, '/applications'],
      [stack.internalUrl, '/readyz'],
    ] as const) {
      expect(await raw(base, 'OPTIONS', path)).toBeLessThan(500);
    }
  });
});
