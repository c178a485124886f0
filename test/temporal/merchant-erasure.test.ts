/**
 * Erasing a merchant on the whole stack (real dev server, sandbox over HTTP, real worker and app, every client and the
 * worker with the per-merchant envelope codec over a key file): two merchants' applications are written under their
 * own keys; after merchant-a is erased (src/temporal/merchant-erasure.ts), its open workflows are terminated, every
 * payload of its histories fails to decode with the erasure's message, through the data converter's codec (this
 * process's and a fresh one's) and through POST /codec/decode, while merchant-b's all decode; the audit trail records
 * the erasure.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@temporalio/client';
import type { Payload } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';
import { MemoryAuditLog } from '../../src/audit/audit-log';
import { FileMerchantKeyStore } from '../../src/keys/file-merchant-key-store';
import { MerchantKeyRing, MerchantPayloadCodec, PayloadKeyErasedError } from '../../src/security/merchant-keys';
import { ENCRYPTED_ENCODING, KEY_ID_METADATA_KEY, parsePayloadEncryptionKeys } from '../../src/security/payload-codec';
import { eraseMerchant } from '../../src/temporal/merchant-erasure';
import { historyPayloads } from '../helpers/history-payloads';
import { startTestStack, TEST_OPERATOR_KEY, type TestStack } from '../helpers/stack';
import { eventually, TEST_PAYLOAD_ENCRYPTION_KEYS } from '../helpers/temporal';

const KEY_A = `merchant-a-${randomBytes(16).toString('hex')}`;
const KEY_B = `merchant-b-${randomBytes(16).toString('hex')}`;
const KEY_C = `merchant-c-${randomBytes(16).toString('hex')}`;
const masters = parsePayloadEncryptionKeys(TEST_PAYLOAD_ENCRYPTION_KEYS);
const text = (bytes: Uint8Array | null | undefined) => Buffer.from(bytes ?? []).toString('utf8');
const b64 = (bytes: Uint8Array | null | undefined) => Buffer.from(bytes ?? []).toString('base64');

/** Every encrypted payload of a history (search attributes and headers are never codec-encoded). */
function encryptedPayloads(history: temporal.api.history.v1.IHistory): Payload[] {
  const found: Payload[] = [];
  const visit = (value: unknown, key: string): void => {
    if (value === null || typeof value !== 'object' || key === 'searchAttributes' || key === 'header') return;
    if (ArrayBuffer.isView(value)) return;
    if (Array.isArray(value)) return value.forEach((v) => visit(v, key));
    const record = value as Record<string, unknown>;
    const metadata = record.metadata as Record<string, Uint8Array> | undefined;
    if (metadata && typeof metadata === 'object' && 'data' in record && metadata.encoding) {
      if (text(metadata.encoding) === ENCRYPTED_ENCODING) found.push(record);
      return;
    }
    for (const [k, v] of Object.entries(record)) visit(v, k);
  };
  visit(history.events ?? [], 'events');
  return found;
}

describe('erasing a merchant (whole stack, crypto-shredding)', () => {
  let dir: string;
  let store: FileMerchantKeyStore;
  let ring: MerchantKeyRing;
  let stack: TestStack;
  const audit = new MemoryAuditLog();

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'merchant-erasure-'));
    store = new FileMerchantKeyStore(join(dir, 'keys', 'merchant-keys.json'));
    await store.ready();
    ring = new MerchantKeyRing({ store, masterKeys: masters });
    stack = await startTestStack({
      merchantApiKeys: [
        { name: 'merchant-a', key: KEY_A },
        { name: 'merchant-b', key: KEY_B },
        { name: 'merchant-c', key: KEY_C },
      ],
      payloadCodec: new MerchantPayloadCodec({ masterKeys: masters, ring }),
      audit,
      // Applications stay open (CREATED) for the whole test: the default 300 ms lifecycle would complete a run before
      // its erasure on a slow machine, and an erasure only terminates what is still running.
      sandbox: { lifecycle: { stepMs: 600_000 } },
    });
  });
  afterAll(async () => {
    await stack?.close();
    await store?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const create = async (key: string) => {
    const res = await fetch(`${stack.internalUrl}/applications`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({
        merchantReference: `erase-${randomUUID()}`,
        redirectUrl: 'https://shop.example/return',
        customer: { name: `Customer ${randomUUID()}` },
      }),
    });
    expect(res.status).toBe(201);
    return ((await res.json()) as { workflowId: string }).workflowId;
  };
  /** The merchant's running workflow ids as visibility lists them now. */
  const listed = async (client: Client, merchantId: string) => {
    const page = await client.workflowService.listWorkflowExecutions({
      namespace: client.options.namespace,
      query: `MerchantId = "${merchantId}" AND ExecutionStatus = "Running"`,
    });
    return (page.executions ?? []).map((e) => e.execution?.workflowId);
  };
  /** Visibility lags behind starts (seconds on a loaded server): wait until it lists every id. */
  const untilListed = (merchantId: string, ids: string[]) =>
    eventually(async () => {
      const now = await listed(stack.t.client, merchantId);
      return ids.every((id) => now.includes(id)) ? true : undefined;
    });
  const history = (workflowId: string) => stack.t.client.workflow.getHandle(workflowId).fetchHistory();
  const decodeOverHttp = async (payloads: Payload[]) => {
    const res = await fetch(`${stack.internalUrl}/codec/decode`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TEST_OPERATOR_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        payloads: payloads.map((p) => ({
          metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, b64(v)])),
          data: b64(p.data),
        })),
      }),
    });
    return { status: res.status, body: (await res.json()) as { message?: string; payloads?: unknown[] } };
  };

  it("makes merchant-a's histories undecodable, merchant-b's still decode, and records the erasure", async () => {
    const a = [await create(KEY_A), await create(KEY_A)];
    const b = await create(KEY_B);

    // Written under each merchant's own key: every payload of the history, nothing under the master key.
    for (const [workflowId, merchant] of [...a.map((id) => [id, 'merchant-a'] as const), [b, 'merchant-b'] as const]) {
      const h = await history(workflowId);
      // Headers (trace context) and markers (patch ids) are the SDK's, never codec-encoded (docs/security.md); the
      // server writes the details of an activity cancelled before it started itself.
      const clear = historyPayloads(h).filter(
        (p) =>
          p.encoding !== ENCRYPTED_ENCODING &&
          !/\.header\.|markerRecordedEventAttributes/.test(p.path) &&
          p.plain !== '"ACTIVITY_ID_NOT_STARTED"',
      );
      expect(clear).toEqual([]);
      const keyIds = new Set(encryptedPayloads(h).map((p) => text(p.metadata?.[KEY_ID_METADATA_KEY])));
      expect([...keyIds]).toEqual([`merchant:${merchant}:1`]);
    }

    await untilListed('merchant-a', a);
    const erased = await eraseMerchant(
      { client: stack.t.client, ring, audit, settleMs: 1_000 },
      { merchantId: 'merchant-a', actor: { kind: 'operator', name: 'test-operator' }, via: 'tool' },
    );
    expect(erased.terminated).toEqual(expect.arrayContaining(a));
    expect(erased.terminated).not.toContain(b);
    for (const workflowId of a)
      expect((await stack.t.client.workflow.getHandle(workflowId).describe()).status.name).toBe('TERMINATED');
    const message = `payload key of merchant merchant-a was erased on ${erased.erasedAt}`;

    // Another process's codec (a ring of its own over the same store), as a worker or API elsewhere after its TTL.
    const elsewhere = new MerchantPayloadCodec({
      masterKeys: masters,
      ring: new MerchantKeyRing({ store: new FileMerchantKeyStore(store.location), masterKeys: masters }),
    });
    for (const workflowId of a) {
      const payloads = encryptedPayloads(await history(workflowId));
      expect(payloads.length).toBeGreaterThan(3);
      for (const payload of payloads) {
        await expect(stack.payloadCodec.decode([payload])).rejects.toThrow(message);
        await expect(elsewhere.decode([payload])).rejects.toBeInstanceOf(PayloadKeyErasedError);
      }
      const overHttp = await decodeOverHttp(payloads);
      expect(overHttp.status).toBe(400);
      expect(overHttp.body.message).toContain(message);
    }

    const payloadsOfB = encryptedPayloads(await history(b));
    expect((await stack.payloadCodec.decode(payloadsOfB)).length).toBe(payloadsOfB.length);
    expect((await elsewhere.decode(payloadsOfB)).length).toBe(payloadsOfB.length);
    const overHttp = await decodeOverHttp(payloadsOfB);
    expect(overHttp.status).toBe(200);
    expect(overHttp.body.payloads).toHaveLength(payloadsOfB.length);

    // Nothing new is written for merchant-a: its start fails before Temporal holds anything of it.
    const refused = await fetch(`${stack.internalUrl}/applications`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY_A}` },
      body: JSON.stringify({ merchantReference: `after-${randomUUID()}`, redirectUrl: 'https://shop.example/r' }),
    });
    expect(refused.status).toBeGreaterThanOrEqual(500);

    const records = await audit.query({ action: 'erasure', limit: 10 });
    expect(records).toEqual([
      expect.objectContaining({
        actor: { kind: 'operator', name: 'test-operator' },
        action: 'erasure',
        target: { kind: 'merchant', id: 'merchant-a' },
        details: expect.objectContaining({ openWorkflows: 2, keyGenerations: 1, alreadyErased: false, via: 'tool' }),
      }),
    ]);
    expect((await audit.verify()).ok).toBe(true);
    await stack.t.client.workflow.getHandle(b).terminate('test done');
  });

  it('terminates a run that visibility lists only after the erasure began (it settles, not sweeps once)', async () => {
    const late = await create(KEY_C);
    await untilListed('merchant-c', [late]);
    // Visibility as a loaded server shows it: the run is missing from the first three listings.
    let listings = 0;
    const { workflowService } = stack.t.client;
    const lagging = new Proxy(workflowService, {
      get(target, property, receiver) {
        if (property !== 'listWorkflowExecutions') return Reflect.get(target, property, receiver) as unknown;
        return async (request: temporal.api.workflowservice.v1.IListWorkflowExecutionsRequest) => {
          const page = await target.listWorkflowExecutions(request);
          if (++listings > 3) return page;
          return { ...page, executions: (page.executions ?? []).filter((e) => e.execution?.workflowId !== late) };
        };
      },
    });
    const client = Object.create(stack.t.client, { workflowService: { value: lagging } }) as Client;

    const erased = await eraseMerchant(
      { client, ring, audit, settleMs: 1_500, sweepIntervalMs: 200 },
      { merchantId: 'merchant-c', actor: { kind: 'operator', name: 'test-operator' }, via: 'tool' },
    );
    expect(listings).toBeGreaterThan(4);
    expect(erased.terminated).toEqual([late]);
    expect((await stack.t.client.workflow.getHandle(late).describe()).status.name).toBe('TERMINATED');
  });
});
