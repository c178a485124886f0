/**
 * The audit trail on the whole stack (docs/security.md#audit-trail): a decode at /codec and a secret rotation each
 * leave a record that operators read at GET /operator/audit, merchants cannot read it, and when the trail cannot be
 * written the action is refused (503) and does not happen.
 */
import { MemoryAuditLog } from '../../src/audit/audit-log';
import { startTestStack, TEST_API_KEY, TEST_OPERATOR_KEY, type TestStack } from '../helpers/stack';

interface Page {
  records: {
    sequence: number;
    action: string;
    actor: { kind: string; name: string };
    target: { kind: string; id: string };
    details: Record<string, unknown>;
    hash: string;
    prevHash: string;
  }[];
  next: number | null;
}

describe('the audit trail (whole stack)', () => {
  let stack: TestStack;
  const audit = new MemoryAuditLog();
  beforeAll(async () => {
    // The merchant's secret derived from a master (the test master), so the merchant may rotate it.
    stack = await startTestStack({ audit, callbacks: { signingSecrets: [] } });
  });
  afterEach(() => stack.openApi.expectAllMatched());
  afterAll(async () => {
    await stack?.close();
  });

  const call = (key: string, path: string, init: RequestInit = {}) =>
    fetch(`${stack.internalUrl}${path}`, {
      ...init,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, ...init.headers },
    });
  const decode = async () => {
    const [encoded] = await stack.payloadCodec.encode([
      { metadata: { encoding: Buffer.from('json/plain') }, data: Buffer.from('{"marker":"audit"}') },
    ]);
    return call(TEST_OPERATOR_KEY, '/codec/decode', {
      method: 'POST',
      headers: { 'x-namespace': 'default' },
      body: JSON.stringify({
        payloads: [
          {
            metadata: Object.fromEntries(
              Object.entries(encoded!.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v).toString('base64')]),
            ),
            data: Buffer.from(encoded!.data!).toString('base64'),
          },
        ],
      }),
    });
  };
  const rotate = () =>
    call(TEST_API_KEY, '/merchant/callback-signing-secret/rotate', {
      method: 'POST',
      body: JSON.stringify({ gracePeriod: '1h' }),
    });

  it('records a decode and a rotation, readable by operators at /operator/audit', async () => {
    expect((await decode()).status).toBe(200);
    expect((await rotate()).status).toBe(200);

    const res = await call(TEST_OPERATOR_KEY, '/operator/audit');
    expect(res.status).toBe(200);
    const page = (await res.json()) as Page;
    expect(page.records).toMatchObject([
      {
        sequence: 1,
        action: 'codec.decode',
        actor: { kind: 'operator', name: 'test-operator' },
        target: { kind: 'namespace', id: 'default' },
        details: { payloads: 1, origin: null },
      },
      {
        sequence: 2,
        action: 'callback-signing-secret.rotate',
        actor: { kind: 'merchant', name: 'test' },
        target: { kind: 'merchant', id: 'test' },
        details: { gracePeriodMs: 3_600_000, via: 'api' },
      },
    ]);
    expect(page.records[1]!.prevHash).toBe(page.records[0]!.hash);
    expect(page.next).toBeNull();
    // Nothing secret in a record: no key, no decoded data.
    expect(JSON.stringify(page)).not.toMatch(new RegExp(`${TEST_OPERATOR_KEY}|${TEST_API_KEY}|marker|whsec_`));

    const filtered = (await (
      await call(TEST_OPERATOR_KEY, '/operator/audit?action=codec.decode&limit=1')
    ).json()) as Page;
    expect(filtered.records.map((r) => r.sequence)).toEqual([1]);
    expect(filtered.next).toBe(1);
    const after = (await (await call(TEST_OPERATOR_KEY, '/operator/audit?after=1&actorKind=merchant')).json()) as Page;
    expect(after.records.map((r) => r.action)).toEqual(['callback-signing-secret.rotate']);
    expect(await audit.verify()).toMatchObject({ ok: true, records: 2 });
  });

  it("refuses a merchant's key, and no key, with the 401 of other operator routes", async () => {
    const merchant = await call(TEST_API_KEY, '/operator/audit');
    expect(merchant.status).toBe(401);
    expect(JSON.stringify(await merchant.json())).not.toMatch(/codec\.decode/);
    const none = await fetch(`${stack.internalUrl}/operator/audit`);
    expect(none.status).toBe(401);
    expect((await call(TEST_OPERATOR_KEY, '/operator/audit?unknown=1')).status).toBe(400);
  });

  it('refuses the action (503) when the trail cannot be written: no decode, no rotation', async () => {
    const before = (await (await call(TEST_API_KEY, '/merchant/callback-signing-secret')).json()) as {
      generation: number;
    };
    audit.failing = 'disk full';
    try {
      const decoded = await decode();
      expect(decoded.status).toBe(503);
      expect(await decoded.text()).not.toContain('marker');
      const rotated = await rotate();
      expect(rotated.status).toBe(503);
      expect(rotated.headers.get('retry-after')).toBe('5');
    } finally {
      audit.failing = undefined;
    }
    const after = (await (await call(TEST_API_KEY, '/merchant/callback-signing-secret')).json()) as {
      generation: number;
    };
    expect(after.generation).toBe(before.generation);
    expect(audit.records).toHaveLength(2);
  });
});
