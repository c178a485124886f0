/**
 * Property-based tests (fast-check) of both receivers and the merchant facade, over real HTTP on the whole stack
 * (the suite's dev server, the bank sandbox, a worker, both listeners). Thousands of generated requests: content
 * types and charsets, content encodings (identity, gzip, deflate, br, garbage), bodies, paths with valid and
 * malformed percent-encoding, methods, headers, credentials.
 * - Never a 5xx (a valid webhook may get the contract's 503 while Temporal cannot take it: sent again, as the bank does).
 * - Every request built valid is accepted (202); every request built with at least one defect is refused (4xx)
 *   and signals nothing: the signals in each target workflow's history (every run) are exactly the accepted ones.
 * - The facade without the key answers 401 on every merchant path, and no generated request starts anything.
 * PROPERTY_RUNS (default 1500 per property) and PROPERTY_SEED reproduce or widen a run.
 */
import { createHmac, randomUUID } from 'node:crypto';
import { Agent, request } from 'node:http';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { WorkflowNotFoundError } from '@temporalio/client';
import { tenantWebhookHash } from '../../src/security/webhook-hash';
import {
  consentClaimWorkflowId,
  consentRefreshWorkflowId,
  financeApplicationWorkflowId,
  lateAccountEventsWorkflowId,
  transactionEventsWorkflowId,
  webhookKey,
} from '../../src/shared/ids';
import { startTestStack, type TestStack } from '../helpers/stack';
import { eventually } from '../helpers/temporal';
import { claimTestConsent, TEST_MERCHANT } from '../helpers/merchants';

const RUNS = Number(process.env.PROPERTY_RUNS) || 1500;
const SEED = process.env.PROPERTY_SEED ? Number(process.env.PROPERTY_SEED) : undefined;
const FINANCE_LIMIT = 16 * 1024;
const ACCOUNT_LIMIT = 256 * 1024;

interface RawRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: Uint8Array;
  /** Sent with Transfer-Encoding: chunked instead of Content-Length. */
  chunked: boolean;
}

/**
 * One kept-alive connection, as a webhook sender's pool would reuse: every answer, early refusals included, must leave
 * the connection usable for the next request (a body the server did not read is read off the socket).
 */
const agent = new Agent({ keepAlive: true, maxSockets: 1 });

/** One request as given (no URL normalisation, any header), the status and body of the answer. */
function send(baseUrl: string, raw: RawRequest): Promise<{ status: number; body: string }> {
  const url = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { ...raw.headers };
    // Node's client frames a body as chunked by itself only for methods that usually carry one: say it for all.
    if (raw.body)
      headers[raw.chunked ? 'transfer-encoding' : 'content-length'] = raw.chunked ? 'chunked' : String(raw.body.length);
    const req = request(
      { host: url.hostname, port: url.port, method: raw.method, path: raw.path, headers, agent },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode!, body: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    if (raw.body) req.write(raw.body);
    req.end();
  });
}

// ---------------------------------------------------------------------------------------------------------------
// Pieces of requests, valid and defective.

const VALID_CONTENT_TYPES = [
  'application/json',
  'application/json; charset=utf-8',
  'application/json;charset=UTF-8',
  'Application/JSON; Charset="utf-8"',
  'application/json ; charset=utf8',
  'application/vnd.bank.event+json',
  'application/json; foo=bar; charset=utf-8',
  'application/json; version=1',
];
const WRONG_CONTENT_TYPES = [
  'text/plain',
  'text/json',
  'application/xml',
  'application/json-seq',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=xyz',
  'json',
  'application/',
  '*/*',
  'application/jsonp',
];
const WRONG_CHARSETS = [
  'latin1',
  'iso-8859-1',
  'utf-16',
  'UTF-16LE',
  'us-ascii',
  'utf-7',
  'windows-1252',
  '',
  'utf-8x',
];
const VALID_ENCODINGS = [undefined, 'identity', 'gzip', 'x-gzip', 'deflate', 'br', 'GZIP', ' gzip '];
const WRONG_ENCODINGS = ['compress', 'x-foo', 'gzip, gzip', 'identity, gzip', 'zstd', 'chunked', '*'];
const MALFORMED_PERCENT = ['%E0%A4%A', '%', '%zz', '%C0%AF', '%ED%A0%80', '%F', 'a%2', '%%'];

const contentTypeArb = fc.constantFrom(...VALID_CONTENT_TYPES);
const encodingArb = fc.constantFrom(...VALID_ENCODINGS);

function encode(body: Buffer, encoding: string | undefined): Buffer {
  switch (encoding?.trim().toLowerCase()) {
    case 'gzip':
    case 'x-gzip':
      return gzipSync(body);
    case 'deflate':
      return deflateSync(body);
    case 'br':
      return brotliCompressSync(body);
    default:
      return body;
  }
}

/** Headers a sender may add that change nothing (names that are not ones the receivers read). */
const extraHeadersArb = fc.dictionary(
  fc.stringMatching(/^x-[a-z0-9-]{1,12}$/),
  fc.stringMatching(/^[\x21-\x7e][\x20-\x7e]{0,40}$/),
  { maxKeys: 3 },
);
/** JSON fields a body may carry besides the ones read. */
const extrasArb = fc.dictionary(fc.stringMatching(/^x_[a-z0-9]{1,8}$/), fc.jsonValue({ maxDepth: 2 }), {
  maxKeys: 3,
});
const jsonTextArb = (value: unknown) =>
  fc
    .record({ indent: fc.constantFrom(0, 2, '\t'), bom: fc.boolean() })
    .map(({ indent, bom }) => `${bom ? '\ufeff' : ''}${JSON.stringify(value, null, indent)}`);

/** Bytes that are not JSON (checked with JSON.parse, as the receiver does after a byte-order mark). */
const notJsonArb = fc
  .oneof(
    fc.string({ maxLength: 40 }),
    fc.constantFrom('', '{', '{"financeApplicationId":', "{'a':1}", 'undefined', 'NaN', '[1,]', '{"a":1}}', '\u0000'),
  )
  .filter((text) => {
    try {
      JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
      return false;
    } catch {
      return true;
    }
  });

/** A path segment spelled with some characters percent-encoded (decodes to the same text). */
const percentEncodedArb = (text: string) =>
  fc
    .array(fc.boolean(), { minLength: text.length, maxLength: text.length })
    .map((flags) =>
      [...text]
        .map((ch, i) => (flags[i] ? `%${ch.charCodeAt(0).toString(16).padStart(2, '0').toUpperCase()}` : ch))
        .join(''),
    );

/** The defects a request can carry; each one alone makes it invalid. */
type Defect =
  | 'auth'
  | 'contentType'
  | 'charset'
  | 'encoding'
  | 'badCompression'
  | 'json'
  | 'schema'
  | 'size'
  | 'path'
  | 'method'
  | 'hugeHeader';

interface Plan {
  raw: RawRequest;
  defects: Defect[];
  /** For valid requests: which workflow gets the signal. */
  target?: 'finance' | 'account' | 'late' | 'transaction';
}

/** Applies the transport defects (content type, charset, encoding, method, huge header) to a valid request. */
function transport(
  defects: Defect[],
  pieces: {
    contentType: string;
    wrongContentType: string;
    wrongCharset: string;
    encoding: string | undefined;
    wrongEncoding: string;
    wrongMethod: string;
    chunked: boolean;
    extraHeaders: Record<string, string>;
  },
  path: string,
  text: string,
  auth: Record<string, string>,
): RawRequest {
  const headers: Record<string, string> = { ...pieces.extraHeaders, ...auth };
  if (defects.includes('contentType')) {
    if (pieces.wrongContentType !== 'none') headers['content-type'] = pieces.wrongContentType;
  } else if (defects.includes('charset')) {
    headers['content-type'] = `application/json; charset=${pieces.wrongCharset}`;
  } else headers['content-type'] = pieces.contentType;
  let body: Buffer = Buffer.from(text, 'utf8');
  if (defects.includes('encoding')) headers['content-encoding'] = pieces.wrongEncoding;
  else if (defects.includes('badCompression')) headers['content-encoding'] = pieces.chunked ? 'gzip' : 'br';
  else {
    if (pieces.encoding !== undefined) headers['content-encoding'] = pieces.encoding;
    body = encode(body, pieces.encoding);
  }
  if (defects.includes('hugeHeader')) headers['x-padding'] = 'p'.repeat(20_000);
  return {
    method: defects.includes('method') ? pieces.wrongMethod : 'POST',
    path,
    headers,
    body,
    chunked: pieces.chunked,
  };
}

const transportArb = fc.record({
  contentType: contentTypeArb,
  wrongContentType: fc.constantFrom('none', ...WRONG_CONTENT_TYPES),
  wrongCharset: fc.constantFrom(...WRONG_CHARSETS),
  encoding: encodingArb,
  wrongEncoding: fc.constantFrom(...WRONG_ENCODINGS),
  wrongMethod: fc.constantFrom('GET', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS'),
  chunked: fc.boolean(),
  extraHeaders: extraHeadersArb,
});

/** No defect about a third of the time, else one to three. */
const defectsArb = (all: Defect[]) =>
  fc.oneof(
    { weight: 1, arbitrary: fc.constant([] as Defect[]) },
    { weight: 2, arbitrary: fc.subarray(all, { minLength: 1, maxLength: 3 }) },
  );

/**
 * Sends a plan as the bank would: a valid webhook answered 503 (Temporal could not take the signal in time, e.g.
 * while the target's run is closing to continue as new under this storm of signals) is sent again, a few times.
 * A defective one is sent once: it must be refused before any Temporal call, so it never gets a 503.
 */
async function sendAsTheBank(baseUrl: string, plan: Plan): Promise<{ status: number; body: string }> {
  let answer = await send(baseUrl, plan.raw);
  for (let retry = 0; plan.defects.length === 0 && answer.status === 503 && retry < 10; retry++) {
    await new Promise((resolve) => setTimeout(resolve, 500));
    answer = await send(baseUrl, plan.raw);
  }
  return answer;
}

/** The answer a plan must get: 202 when valid; refused (4xx; an OPTIONS may get the router's Allow list) otherwise. */
function checkAnswer(plan: Plan, answer: { status: number; body: string }): void {
  const seen = { defects: plan.defects, method: plan.raw.method, path: plan.raw.path, status: answer.status };
  if (answer.status >= 500) throw new Error(`5xx: ${JSON.stringify(seen)} ${answer.body.slice(0, 300)}`);
  if (plan.defects.length === 0) {
    if (answer.status !== 202) throw new Error(`valid request not accepted: ${JSON.stringify(seen)} ${answer.body}`);
    return;
  }
  const refused = answer.status >= 400 || (plan.raw.method === 'OPTIONS' && answer.status < 300);
  if (!refused || answer.body.includes('"accepted"'))
    throw new Error(`defective request not refused: ${JSON.stringify(seen)} ${answer.body.slice(0, 300)}`);
}

describe('receivers and facade under generated requests (fast-check, real HTTP, real Temporal)', () => {
  let stack: TestStack;
  let ref: string;
  let financeApplicationId: string;
  let consentId: string;
  let taskId: string;
  const txConsentId = `prop-tx-${randomUUID()}`;

  beforeAll(async () => {
    stack = await startTestStack();
    // A finance application whose status never moves: every signal in its history comes from this test.
    ref = `prop-fa-${randomUUID()}`;
    stack.sandbox.control.setApplicationScript({ steps: [] }, { merchantReference: ref });
    const created = await stack.facade('/applications', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ merchantReference: ref, redirectUrl: 'https://shop.example/done' }),
    });
    expect(created.status).toBe(201);
    financeApplicationId = ((await created.json()) as { financeApplicationId: string }).financeApplicationId;
    // A refresh that waits for a bank that never answers (generated events never name it).
    consentId = `prop-rx-${randomUUID()}`;
    stack.sandbox.control.setConsent(consentId, {
      banks: [{ bankCode: 'QUIET', bankName: 'Quiet Bank', accounts: ['q-1'], neverAnswers: true }],
    });
    const refresh = await stack.facade(`/consents/${consentId}/refresh`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ expectedBankCodes: ['QUIET'], timeout: '30m' }),
    });
    expect(refresh.status).toBe(202);
    taskId = ((await refresh.json()) as { taskId: string }).taskId;
    // The transactionEvents' consent is the merchant's too (its refresh claimed the other): they start its workflow.
    await claimTestConsent(stack.t, txConsentId);
  });
  afterAll(async () => {
    for (const id of [
      financeApplicationWorkflowId(TEST_MERCHANT, ref),
      consentRefreshWorkflowId(consentId),
      lateAccountEventsWorkflowId(TEST_MERCHANT, consentId),
      transactionEventsWorkflowId(TEST_MERCHANT, txConsentId),
      consentClaimWorkflowId(consentId),
      consentClaimWorkflowId(txConsentId),
    ])
      await stack.t.client.workflow
        .getHandle(id)
        .terminate('test done')
        .catch(() => undefined);
    agent.destroy();
    await stack?.close();
  });

  /** Signals in the workflow's history, over every run (a continue-as-new starts a new history). */
  const signalsAcrossRuns = async (workflowId: string): Promise<number> => {
    let n = 0;
    for await (const run of stack.t.client.workflow.list({ query: `WorkflowId = '${workflowId}'` })) {
      const history = await stack.t.client.workflow.getHandle(workflowId, run.runId).fetchHistory();
      n += (history.events ?? []).filter((e) => e.workflowExecutionSignaledEventAttributes).length;
    }
    return n;
  };
  /** The history holds exactly `accepted` signals (signals land after a running workflow task: wait for them). */
  const expectSignals = async (workflowId: string, accepted: number) => {
    await eventually(async () => ((await signalsAcrossRuns(workflowId)) >= accepted ? true : undefined), 60_000, 500);
    expect(await signalsAcrossRuns(workflowId)).toBe(accepted);
  };
  const params = () => ({ numRuns: RUNS, seed: SEED, endOnFailure: true });

  it('finance-application webhooks: valid ones accepted and signalled once each, defective ones refused, none 5xx', async () => {
    // The URL the bank was given: the merchant's key for the reference and its tenant hash.
    const key = webhookKey(TEST_MERCHANT, ref);
    const hash = tenantWebhookHash(stack.webhooks.hashSecret, TEST_MERCHANT, ref);
    const wrongHashArb = fc.oneof(
      fc.constant(''),
      fc.constant(tenantWebhookHash(stack.webhooks.hashSecret, TEST_MERCHANT, `${ref}x`)),
      fc.constant(tenantWebhookHash('another-secret-0123456789abcdefghijkl', TEST_MERCHANT, ref)),
      // A hash of the reference alone (the URLs before tenancy) does not open the tenant key.
      fc.constant(createHmac('sha256', stack.webhooks.hashSecret).update(ref, 'utf8').digest('base64url')),
      fc.constant(hash.slice(0, -1)),
      fc.constant(hash.toUpperCase() === hash ? hash.toLowerCase() : hash.toUpperCase()),
      fc.stringMatching(/^[A-Za-z0-9_-]{1,60}$/),
    );
    const planArb: fc.Arbitrary<Plan> = fc
      .record({
        defects: defectsArb([
          'auth',
          'contentType',
          'charset',
          'encoding',
          'badCompression',
          'json',
          'schema',
          'size',
          'path',
          'method',
          'hugeHeader',
        ]),
        form: fc.constantFrom('segment', 'segment/', 'query'),
        refSpelling: percentEncodedArb(key),
        hashSpelling: percentEncodedArb(hash),
        wrongHash: wrongHashArb,
        malformed: fc.constantFrom(...MALFORMED_PERCENT),
        malformedIn: fc.constantFrom('ref', 'hash'),
        // Its own id (padded too: trimmed); another id is a valid webhook as well, tested elsewhere (and logged at warn).
        id: fc.constantFrom(financeApplicationId, ` ${financeApplicationId} `, `\t${financeApplicationId}`),
        extras: extrasArb,
        badShape: fc.oneof(
          fc.constantFrom<unknown>(null, 42, 'text', true, [], [{ financeApplicationId }]),
          fc.constantFrom<unknown>(
            {},
            { financeApplicationId: 42 },
            { financeApplicationId: null },
            { financeApplicationId: '' },
            { financeApplicationId: '   ' },
            { financeApplicationId: 'x'.repeat(257) },
            { financeApplicationId: [financeApplicationId] },
            { financeApplicationID: financeApplicationId },
          ),
        ),
        notJson: notJsonArb,
        transport: transportArb,
        text: fc.constant(''), // filled below
      })
      .chain((p) => jsonTextArb({ ...p.extras, financeApplicationId: p.id }).map((validText) => ({ ...p, validText })))
      .chain((p) => jsonTextArb(p.badShape).map((badText) => ({ ...p, badText })))
      .map((p): Plan => {
        const d = p.defects;
        let refPart = p.refSpelling;
        let hashPart = d.includes('auth') ? p.wrongHash : p.hashSpelling;
        if (d.includes('path')) {
          if (p.malformedIn === 'ref') refPart = `${refPart}${p.malformed}`;
          else hashPart = `${hashPart}${p.malformed}`;
        }
        const base = `/webhooks/finance-applications/${refPart}`;
        const path =
          p.form === 'query'
            ? `${base}?hash=${hashPart}`
            : hashPart === ''
              ? base
              : `${base}/${hashPart}${p.form === 'segment/' ? '/' : ''}`;
        let text = p.validText;
        if (d.includes('json')) text = p.notJson;
        else if (d.includes('schema')) text = p.badText;
        if (d.includes('size'))
          text = `{"financeApplicationId":"${financeApplicationId}","pad":"${'x'.repeat(FINANCE_LIMIT)}"}`;
        return { raw: transport(d, p.transport, path, text, {}), defects: d, target: 'finance' };
      });

    let accepted = 0;
    await fc.assert(
      fc.asyncProperty(planArb, async (plan) => {
        const answer = await sendAsTheBank(stack.publicUrl, plan);
        checkAnswer(plan, answer);
        if (answer.status === 202) accepted++;
      }),
      params(),
    );
    expect(accepted).toBeGreaterThan(RUNS / 10);
    await expectSignals(financeApplicationWorkflowId(TEST_MERCHANT, ref), accepted);
  });

  it('account webhooks: valid accountEvents and transactionEvents accepted and signalled once each, defective ones refused, none 5xx', async () => {
    const header = stack.webhooks.securityHeader;
    const bankCodeArb = fc.stringMatching(/^B[A-Z0-9]{0,10}$/);
    const accountsArb = fc.array(
      fc.record({
        accountId: fc.stringMatching(/^[a-z0-9-]{1,20}$/),
        eventType: fc.constantFrom('ADDED', 'REMOVED', 'X'),
      }),
      { maxLength: 4 },
    );
    const accountEventArb = fc.record({
      consentId: fc.constant(consentId),
      // The real task or another (a stale event is a valid webhook too); never the awaited bank.
      taskId: fc.constantFrom(taskId, `other-${taskId}`),
      taskStatus: fc.constantFrom('FINISHED', 'FAILED', 'RUNNING'),
      bankCode: bankCodeArb,
      bankName: fc.string({ maxLength: 30 }),
      accounts: accountsArb,
    });
    const transactionEventArb = fc.record(
      {
        consentId: fc.constant(txConsentId),
        eventType: fc.constantFrom('NEW', 'OTHER'),
        accounts: fc.array(fc.record({ accountId: fc.stringMatching(/^[A-Z0-9-]{1,12}$/) }), {
          minLength: 1,
          maxLength: 4,
        }),
      },
      { requiredKeys: ['consentId', 'accounts'] },
    );
    const badShapeArb = fc.oneof(
      fc.constantFrom<unknown>(null, 1, 'x', [], true),
      accountEventArb.chain((e) =>
        fc
          .constantFrom('consentId', 'taskStatus', 'bankCode', 'bankName', 'accounts')
          .map((field) => Object.fromEntries(Object.entries(e).filter(([k]) => k !== field))),
      ),
      accountEventArb.map((e) => ({ ...e, accounts: 'q-1' })),
      accountEventArb.map((e) => ({ ...e, taskId: '' })),
      accountEventArb.map((e) => ({ ...e, bankCode: 'x'.repeat(65) })),
      accountEventArb.map((e) => ({ ...e, accounts: [{ accountId: 'a' }] })),
      transactionEventArb.map((e) => ({ ...e, accounts: [] })),
      transactionEventArb.map((e) => ({ ...e, consentId: '  ' })),
      transactionEventArb.map((e) => ({ ...e, accounts: [{}] })),
      fc.constant({ consentId: txConsentId }),
    );
    const planArb: fc.Arbitrary<Plan> = fc
      .record({
        defects: defectsArb([
          'auth',
          'contentType',
          'charset',
          'encoding',
          'badCompression',
          'json',
          'schema',
          'size',
          'method',
          'hugeHeader',
        ]),
        // transactionEvents a quarter of the time: each valid one is a signal-with-start of the same workflow.
        kind: fc.constantFrom('accountEvent', 'accountEvent', 'accountEvent', 'transactionEvent'),
        accountEvent: accountEventArb,
        transactionEvent: transactionEventArb,
        extras: extrasArb,
        wrongAuth: fc.oneof(
          fc.constant('none'),
          fc.constantFrom(`${header}x`, header.slice(0, -1), header.toLowerCase(), `Bearer ${header}`, 'Basic'),
          fc.stringMatching(/^[A-Za-z0-9 =+/]{1,40}$/).filter((s) => s.trim() !== header.trim()),
        ),
        badShape: badShapeArb,
        notJson: notJsonArb,
        transport: transportArb,
      })
      .chain((p) => {
        const event = p.kind === 'accountEvent' ? p.accountEvent : p.transactionEvent;
        return jsonTextArb({ ...p.extras, ...event }).map((validText) => ({ ...p, validText }));
      })
      .chain((p) => jsonTextArb(p.badShape).map((badText) => ({ ...p, badText })))
      .map((p): Plan => {
        const d = p.defects;
        const auth: Record<string, string> = d.includes('auth')
          ? p.wrongAuth === 'none'
            ? {}
            : { authorization: p.wrongAuth }
          : { authorization: header };
        let text = p.validText;
        if (d.includes('json')) text = p.notJson;
        else if (d.includes('schema')) text = p.badText;
        if (d.includes('size')) text = JSON.stringify({ ...p.transactionEvent, pad: 'x'.repeat(ACCOUNT_LIMIT) });
        return {
          raw: transport(d, p.transport, '/webhooks/accounts', text, auth),
          defects: d,
          // The running refresh's own task goes to it; another task's is a late bank report.
          target: p.kind === 'accountEvent' ? (p.accountEvent.taskId === taskId ? 'account' : 'late') : 'transaction',
        };
      });

    const accepted = { account: 0, late: 0, transaction: 0 };
    await fc.assert(
      fc.asyncProperty(planArb, async (plan) => {
        const answer = await sendAsTheBank(stack.publicUrl, plan);
        checkAnswer(plan, answer);
        if (answer.status === 202) accepted[plan.target as 'account' | 'late' | 'transaction']++;
      }),
      params(),
    );
    expect(accepted.account).toBeGreaterThan(RUNS / 40);
    expect(accepted.late).toBeGreaterThan(RUNS / 40);
    expect(accepted.transaction).toBeGreaterThan(0);
    await expectSignals(consentRefreshWorkflowId(consentId), accepted.account);
    await expectSignals(lateAccountEventsWorkflowId(TEST_MERCHANT, consentId), accepted.late);
    await expectSignals(transactionEventsWorkflowId(TEST_MERCHANT, txConsentId), accepted.transaction);
  });

  it('merchant facade: never a 5xx, 401 on every merchant path without the key, and nothing started', async () => {
    const prefix = `prop-fc-${randomUUID().slice(0, 8)}`;
    const idArb = fc.oneof(
      fc.stringMatching(/^[A-Za-z0-9._~-]{1,20}$/).map((s) => `${prefix}-${s}`),
      fc.constantFrom(...MALFORMED_PERCENT).map((m) => `${prefix}${m}`),
      fc.stringMatching(/^[A-Za-z0-9]{1,8}$/).map((s) => `${prefix}%20${s}`),
      fc.constant(`${prefix}-${'r'.repeat(200)}`),
      fc.constant(''),
    );
    const pathArb = fc.oneof(
      fc.constant('/applications'),
      fc.constant('/applications/'),
      idArb.map((id) => `/applications/${id}`),
      idArb.map((id) => `/applications/${id}/status`),
      idArb.map((id) => `/consents/${id}/refresh`),
      idArb.map((id) => `/consents/${id}`),
      fc.constantFrom('/APPLICATIONS', '/Consents/x/Refresh', '/applications?x=%E0', '/consents/%2e%2e/refresh'),
      fc.constantFrom('/readyz', '/metrics', '/healthz', '/', '/nope', '/codec/decode', '/webhooks/accounts'),
    );
    const authArb = fc.oneof(
      fc.constant<string>('right'),
      fc.constant('none'),
      fc.constantFrom(`Bearer ${stack.apiKey}x`, 'Bearer', 'Bearer  ', `Basic ${stack.apiKey}`, stack.apiKey),
      fc.stringMatching(/^[\x21-\x7e]{1,50}$/).map((s) => `Bearer ${s}`),
    );
    // With the right key, a POST body is never a valid start (no redirectUrl, or a field the schema refuses); no body
    // at all (or an empty JSON body, read as {}) is a valid start of a refresh, so a POST always carries one.
    const bodyArb = fc.oneof(
      fc.record({ merchantReference: idArb, amount: fc.jsonValue({ maxDepth: 1 }) }).map((b) => JSON.stringify(b)),
      fc
        .record({ merchantReference: idArb, redirectUrl: fc.constantFrom('not a url', 'ftp://x', 42) })
        .map((b) => JSON.stringify(b)),
      fc
        .record({ unexpected: fc.jsonValue({ maxDepth: 1 }), timeout: fc.constantFrom('soon', -1, '1s') })
        .map((b) => JSON.stringify(b)),
      fc.record({ expectedBankCodes: fc.constantFrom('AAAA', [1], {}) }).map((b) => JSON.stringify(b)),
      notJsonArb.filter((text) => text.trim() !== ''),
    );
    const planArb = fc
      .record({
        method: fc.constantFrom('GET', 'POST', 'POST', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS'),
        path: pathArb,
        auth: authArb,
        contentType: fc.option(
          fc.constantFrom(...VALID_CONTENT_TYPES, ...WRONG_CONTENT_TYPES, 'application/json; charset=latin1'),
        ),
        encoding: fc.option(fc.constantFrom('gzip', 'deflate', 'br', 'identity', ...WRONG_ENCODINGS)),
        body: fc.option(bodyArb),
        chunked: fc.boolean(),
        extraHeaders: extraHeadersArb,
        hugeHeader: fc.integer({ min: 0, max: 19 }).map((n) => n === 0),
      })
      .chain((p) =>
        p.method === 'POST' && p.auth === 'right' && p.body === null
          ? bodyArb.map((body) => ({ ...p, body }))
          : fc.constant(p),
      );
    const isMerchantPath = (path: string) => /^\/(applications|consents)(\/|$|\?)/i.test(path);

    await fc.assert(
      fc.asyncProperty(planArb, async (p) => {
        // A keyed POST without a body is a valid start of a refresh with the defaults, and a keyed PUT without a body a
        // valid claim of the consent (both documented): not generated.
        fc.pre(
          !(
            p.auth === 'right' &&
            p.body === null &&
            ((p.method === 'POST' && /^\/consents\/[^/]+\/refresh$/.test(p.path)) ||
              (p.method === 'PUT' && /^\/consents\/[^/]+$/.test(p.path)))
          ),
        );
        const headers: Record<string, string> = { ...p.extraHeaders };
        if (p.auth === 'right') headers.authorization = `Bearer ${stack.apiKey}`;
        else if (p.auth !== 'none') headers.authorization = p.auth;
        if (p.contentType !== null) headers['content-type'] = p.contentType;
        let body: Buffer | undefined;
        if (p.body !== null) {
          body = Buffer.from(p.body, 'utf8');
          if (p.encoding !== null) {
            headers['content-encoding'] = p.encoding;
            body = encode(body, p.encoding);
          }
        }
        if (p.hugeHeader) headers['x-padding'] = 'p'.repeat(20_000);
        const answer = await send(stack.internalUrl, {
          method: p.method,
          path: p.path,
          headers,
          body,
          chunked: p.chunked,
        });
        const seen = JSON.stringify({ ...p, extraHeaders: undefined, status: answer.status });
        if (answer.status >= 500) throw new Error(`5xx: ${seen} ${answer.body.slice(0, 300)}`);
        if (p.auth !== 'right' && !p.hugeHeader && isMerchantPath(p.path) && answer.status !== 401)
          throw new Error(`merchant path without the key not refused with 401: ${seen}`);
        if (answer.status === 201 || answer.status === 202)
          throw new Error(`a generated request started something: ${seen} ${answer.body.slice(0, 300)}`);
      }),
      params(),
    );

    // Nothing reached the bank, and no workflow exists under the generated ids.
    const control = stack.sandbox.control;
    expect(control.applications().filter((a) => String(a.createRequest.merchantReference).startsWith(prefix))).toEqual(
      [],
    );
    expect(control.refreshTasks().filter((t) => t.consentId.startsWith(prefix))).toEqual([]);
    for (const id of [`${prefix}-a`, prefix]) {
      for (const workflowId of [
        financeApplicationWorkflowId(TEST_MERCHANT, id),
        consentRefreshWorkflowId(id),
        consentClaimWorkflowId(id),
      ]) {
        await expect(stack.t.client.workflow.getHandle(workflowId).describe()).rejects.toBeInstanceOf(
          WorkflowNotFoundError,
        );
      }
    }
  });
});
