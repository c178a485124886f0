/**
 * A callback signing secret per merchant, on the whole stack (real dev server, the bank sandbox over HTTP, worker, both
 * listeners; docs/decisions/0045-derived-callback-signing-secrets.md). Before it, two merchants set with
 * MERCHANT_API_KEYS alone shared one secret (B could sign a callback A's verifier accepts) and the embedded stack's
 * loopback allow-list (B could point its callbackUrl at A's receiver). Here: each merchant's secret is derived for it,
 * read and rotated through the API and the console by that merchant only, and every worker signs with every
 * generation still valid: old and new during a rotation's grace period, only the new after.
 */
import { randomUUID } from 'node:crypto';
import { Client, WorkflowNotFoundError } from '@temporalio/client';
import { readCallbackSecretGenerations } from '../../src/client/merchant-secrets';
import { Webhook } from 'standardwebhooks';
import { deriveCallbackSigningSecret } from '../../src/security/merchant-signing-secret';
import { merchantSecretsWorkflowId } from '../../src/shared/ids';
import { MerchantId } from '../../src/shared/search-attributes';
import { startMerchant } from '../activities/helpers/merchant-server';
import { recordConsentHistory } from '../helpers/histories';
import { TEST_CALLBACK_SIGNING_MASTER_SECRET } from '../helpers/merchants';
import { startTestStack, type TestStack } from '../helpers/stack';
import { eventually } from '../helpers/temporal';

const KEY_A = 'secrets-a-key-0123456789abcdefghijkl';
const KEY_B = 'secrets-b-key-0123456789abcdefghijkl';
const KEY_C = 'secrets-c-key-0123456789abcdefghijkl';
const SECRET_C = `whsec_${Buffer.from('shop-c set by its operator'.padEnd(32, '.')).toString('base64')}`;

type Merchant = Awaited<ReturnType<typeof startMerchant>>;
type Received = Merchant['received'][number];
interface SecretAnswer {
  merchantId: string;
  secret: string | null;
  generation: number | null;
  rotatable: boolean;
  secrets: { secret: string; generation: number | null; createdAt: string | null; retiresAt: string | null }[];
}

const verifies = (secret: string, { headers, body }: Received): boolean => {
  try {
    new Webhook(secret).verify(body, headers as Record<string, string>);
    return true;
  } catch {
    return false;
  }
};

describe('a callback signing secret per merchant (whole stack)', () => {
  let stack: TestStack;
  let hooksA: Merchant;
  let originA: string;
  beforeAll(async () => {
    hooksA = await startMerchant();
    originA = new URL(hooksA.url).origin;
    stack = await startTestStack({
      // Keys alone for the secrets (none in the file, no CALLBACK_SIGNING_SECRETS): each derived from the master.
      // shop-a lists its receiver's origin; shop-b lists none; shop-c's operator set its secret.
      merchantApiKeys: [
        { name: 'shop-a', key: KEY_A },
        { name: 'shop-b', key: KEY_B },
        { name: 'shop-c', key: KEY_C },
      ],
      merchantsFile: {
        merchants: {
          'shop-a': { callbackAllowedOrigins: [originA] },
          'shop-c': { callbackSigningSecrets: [SECRET_C] },
        },
      },
      sandbox: { lifecycle: { stepMs: 200 } },
    });
  });
  afterEach(() => stack.openApi.expectAllMatched());
  afterAll(async () => {
    await stack?.close();
    await hooksA?.close();
  });

  const as =
    (key: string) =>
    (path: string, init: RequestInit = {}) =>
      fetch(`${stack.internalUrl}${path}`, {
        ...init,
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, ...init.headers },
      });
  const [shopA, shopB, shopC] = [as(KEY_A), as(KEY_B), as(KEY_C)];
  const readSecret = async (call: typeof shopA): Promise<SecretAnswer> => {
    const res = await call('/merchant/callback-signing-secret');
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    return (await res.json()) as SecretAnswer;
  };
  const rotate = (call: typeof shopA, body?: unknown) =>
    call('/merchant/callback-signing-secret/rotate', {
      method: 'POST',
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  /** Starts an application of shop-a with its receiver as callbackUrl; its callbacks, once `count` arrived. */
  const callbacksOfNewApplication = async (count = 1): Promise<Received[]> => {
    const ref = `secret-${randomUUID()}`;
    const created = await shopA('/applications', {
      method: 'POST',
      body: JSON.stringify({
        merchantReference: ref,
        redirectUrl: 'https://shop.example/done',
        callbackUrl: hooksA.url,
      }),
    });
    expect(created.status).toBe(201);
    return eventually(() => {
      const mine = hooksA.received.filter((r) => r.body.includes(`"${ref}"`));
      return mine.length >= count ? mine : undefined;
    }, 60_000);
  };

  it('gives two merchants set with MERCHANT_API_KEYS alone each its own secret: A’s callbacks never verify with B’s', async () => {
    const [a, b] = [await readSecret(shopA), await readSecret(shopB)];
    expect(a).toMatchObject({ merchantId: 'shop-a', generation: 1, rotatable: true });
    expect(b).toMatchObject({ merchantId: 'shop-b', generation: 1, rotatable: true });
    expect(a.secret).toMatch(/^whsec_/);
    expect(a.secret).not.toBe(b.secret);
    // Derived from the master and the merchant's id (the operator can compute it too), generation 1 until rotated.
    expect(a.secret).toBe(deriveCallbackSigningSecret(TEST_CALLBACK_SIGNING_MASTER_SECRET, 'shop-a', 1));
    expect(a.secrets).toEqual([{ secret: a.secret, generation: 1, createdAt: null, retiresAt: null }]);

    const [callback] = await callbacksOfNewApplication();
    expect(verifies(a.secret!, callback!)).toBe(true);
    // B holds its own secret: it cannot forge, nor verify, a callback of A's.
    expect(verifies(b.secret!, callback!)).toBe(false);
    expect(callback!.headers['webhook-signature']!.toString().split(' ')).toHaveLength(1);
  });

  it("refuses B's callbackUrl at A's origin (400 problem): with several merchants, no loopback default is shared", async () => {
    const refused = await shopB('/applications', {
      method: 'POST',
      body: JSON.stringify({
        merchantReference: `b-at-a-${randomUUID()}`,
        redirectUrl: 'https://shop.example/done',
        callbackUrl: hooksA.url,
      }),
    });
    expect(refused.status).toBe(400);
    expect(refused.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(await refused.json()).toMatchObject({
      type: expect.stringMatching(/\/problems\/callback-url-refused$/),
      detail: `callbackUrl refused: callback origin ${originA} is not allowed: MERCHANTS_FILE callbackAllowedOrigins of merchant "shop-b" is empty`,
      details: { field: 'callbackUrl', origin: originA, variable: 'MERCHANTS_FILE' },
    });
  });

  it('rotates: old and new both verify during the grace period, only the new after it; B’s secret never moves', async () => {
    const before = await readSecret(shopA);
    const secretOfB = (await readSecret(shopB)).secret;
    const first = await rotate(shopA, { gracePeriod: '1h' });
    expect(first.status).toBe(200);
    expect(first.headers.get('cache-control')).toBe('no-store');
    const rotated = (await first.json()) as SecretAnswer;
    const gen = rotated.generation!;
    expect(gen).toBe(before.generation! + 1);
    expect(rotated.secrets.map((s) => s.generation)).toEqual([gen, gen - 1]);
    expect(rotated.secrets[1]!.secret).toBe(before.secret);
    expect(Date.parse(rotated.secrets[1]!.retiresAt!)).toBeGreaterThan(Date.now() + 50 * 60_000);
    // Every process reads the same state from Temporal: the API's next read agrees, and so does a worker's client
    // (over the worker's NativeConnection, as src/worker/factory.ts builds it).
    expect(await readSecret(shopA)).toEqual(rotated);
    const workerClient = new Client({
      connection: stack.t.nativeConnection,
      namespace: stack.t.namespace,
      dataConverter: stack.dataConverter,
    });
    expect((await readCallbackSecretGenerations(workerClient, 'shop-a')).map((g) => g.generation)).toEqual([
      gen,
      gen - 1,
    ]);
    const [newSecret, oldSecret] = [rotated.secret!, before.secret!];

    const [during] = await callbacksOfNewApplication();
    expect(during!.headers['webhook-signature']!.toString().split(' ')).toHaveLength(2);
    expect([verifies(newSecret, during!), verifies(oldSecret, during!), verifies(secretOfB!, during!)]).toEqual([
      true,
      true,
      false,
    ]);

    // A second rotation with a short grace period: the first secret ends at once, the second after 2 s.
    const second = (await (await rotate(shopA, { gracePeriod: '2s' })).json()) as SecretAnswer;
    expect(second.secrets.map((s) => s.generation)).toEqual([gen + 1, gen]);
    const newest = second.secret!;
    await eventually(async () => ((await readSecret(shopA)).secrets.length === 1 ? true : undefined));
    const [after] = await callbacksOfNewApplication();
    expect([verifies(newest, after!), verifies(newSecret, after!), verifies(oldSecret, after!)]).toEqual([
      true,
      false,
      false,
    ]);

    // B's secret is where it was, and B has no rotation state at all.
    expect((await readSecret(shopB)).secret).toBe(secretOfB);
    await expect(
      stack.t.client.workflow.getHandle(merchantSecretsWorkflowId('shop-b')).describe(),
    ).rejects.toBeInstanceOf(WorkflowNotFoundError);
    const handle = stack.t.client.workflow.getHandle(merchantSecretsWorkflowId('shop-a'));
    expect((await handle.describe()).typedSearchAttributes.get(MerchantId)).toBe('shop-a');
    await recordConsentHistory('merchant-secrets-rotated', handle);
  });

  it("lets no merchant name another's secret: the key decides, a merchant parameter or field is refused", async () => {
    const secretOfB = (await readSecret(shopB)).secret;
    expect((await shopA('/merchant/callback-signing-secret?merchantId=shop-b')).status).toBe(400);
    const named = await rotate(shopA, { merchantId: 'shop-b' });
    expect(named.status).toBe(400);
    expect(await named.json()).toMatchObject({ errors: [expect.objectContaining({ field: 'merchantId' })] });
    expect((await rotate(shopA, { gracePeriod: '8d' })).status).toBe(400);
    // Without a key: 401, nothing read.
    const anonymous = await fetch(`${stack.internalUrl}/merchant/callback-signing-secret`);
    expect(anonymous.status).toBe(401);
    expect(await anonymous.text()).not.toContain('whsec_');
    expect((await readSecret(shopB)).secret).toBe(secretOfB);
  });

  it('answers 409 to a rotation of a secret the operator sets, and shows it to its merchant only', async () => {
    const c = await readSecret(shopC);
    expect(c).toEqual({
      merchantId: 'shop-c',
      secret: SECRET_C,
      generation: null,
      rotatable: false,
      secrets: [{ secret: SECRET_C, generation: null, createdAt: null, retiresAt: null }],
    });
    const refused = await rotate(shopC);
    expect(refused.status).toBe(409);
    expect(await refused.json()).toMatchObject({
      type: expect.stringMatching(/\/problems\/conflict$/),
      detail: expect.stringContaining('The operator sets this merchant'),
    });
    expect(JSON.stringify(await readSecret(shopA))).not.toContain(SECRET_C);
  });

  describe('in the console', () => {
    // The console's pages are HTML, not operations of the OpenAPI document: its answers are not checked against it.
    afterEach(() => {
      try {
        stack.openApi.expectAllMatched();
      } catch {
        // the console's own answers
      }
    });

    it('shows each merchant its own secret in the console and rotates it there (CSRF token required)', async () => {
      const url = (path: string) => `${stack.internalUrl}${path}`;
      const signIn = async (key: string) => {
        const res = await fetch(url('/console/sign-in'), {
          method: 'POST',
          redirect: 'manual',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ key }).toString(),
        });
        expect(res.status).toBe(303);
        return res.headers.get('set-cookie')!.split(';')[0]!;
      };
      const page = async (cookie: string) => {
        const res = await fetch(url('/console/callback-secret'), { headers: { cookie } });
        expect(res.status).toBe(200);
        expect(res.headers.get('cache-control')).toBe('no-store');
        return res.text();
      };
      const [a, b] = [await signIn(KEY_A), await signIn(KEY_B)];
      const [secretA, secretB] = [(await readSecret(shopA)).secret!, (await readSecret(shopB)).secret!];
      const pageA = await page(a);
      expect(pageA).toContain(secretA);
      expect(pageA).not.toContain(secretB);
      expect(pageA).toContain('href="/console/callback-secret"');
      const pageB = await page(b);
      expect(pageB).toContain(secretB);
      expect(pageB).not.toContain(secretA);

      const post = (cookie: string, form: Record<string, string>) =>
        fetch(url('/console/callback-secret/rotate'), {
          method: 'POST',
          redirect: 'manual',
          headers: { 'content-type': 'application/x-www-form-urlencoded', cookie },
          body: new URLSearchParams(form).toString(),
        });
      expect((await post(b, { gracePeriod: '24h' })).status).toBe(403); // no CSRF token: nothing rotated
      expect((await readSecret(shopB)).secret).toBe(secretB);
      const csrf = /name="csrf" value="([^"]+)"/.exec(pageB)![1]!;
      expect((await post(b, { gracePeriod: '5m', csrf })).status).toBe(400); // only the offered choices
      const rotated = await post(b, { gracePeriod: '24h', csrf });
      expect(rotated.status).toBe(303);
      expect(rotated.headers.get('location')).toBe('/console/callback-secret');
      const after = await readSecret(shopB);
      expect(after.secrets.map((s) => s.secret)).toEqual([
        deriveCallbackSigningSecret(TEST_CALLBACK_SIGNING_MASTER_SECRET, 'shop-b', 2),
        secretB,
      ]);
      expect(await page(b)).toContain(after.secret!);
      // A's console and secret are untouched by B's rotation.
      expect((await readSecret(shopA)).secret).toBe(secretA);
    });
  });
});
