import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RunningSandbox } from '../../src/sandbox';
import { loadSandboxState, sandboxStateFile } from '../../src/sandbox/persistence';
import { api, sandbox, startReceiver, token, waitFor, type Receiver } from './helpers';

/** The embedded sandbox keeps its memory in a file: a restarted sandbox goes on with every application and refresh. */
describe('sandbox persistence', () => {
  let dir: string;
  let file: string;
  let receiver: Receiver;
  const running: RunningSandbox[] = [];
  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'sandbox-state-'));
    file = join(dir, 'data', 'bank-sandbox.json');
    receiver = await startReceiver();
  });
  afterEach(async () => {
    for (const s of running.splice(0)) await s.close();
    await receiver.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const start = async (stepMs: number, bankDelayMs: [number, number] = [5, 30]) => {
    const s = await sandbox({
      lifecycle: { stepMs, statuses: ['RECEIVED', 'UNDER_REVIEW', 'PAID_OUT'] },
      refresh: { bankDelayMs },
      accountWebhook: { endpoint: `${receiver.url}/accounts`, activation: 'immediate' },
      persistence: { file, everyMs: 20 },
    });
    running.push(s);
    return s;
  };

  test('an application created before a restart is known after it and goes on to its end', async () => {
    const first = await start(400);
    const t1 = await token(first.url);
    const created = await api(first.url, t1, 'POST', '/applications', {
      redirectUrl: 'https://shop.example/r',
      webhookUrl: `${receiver.url}/hook/abc`,
      merchantReference: 'order-1',
    });
    expect(created.status).toBe(201);
    const { financeApplicationId } = created.body as { financeApplicationId: string };
    await first.close();
    running.splice(0);

    // Stored atomically, for the owner only, no temporary file left behind.
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readdirSync(join(dir, 'data'))).toEqual(['bank-sandbox.json']);
    const saved = loadSandboxState(file)!;
    expect(saved.applications.map((a) => a.record.financeApplicationId)).toEqual([financeApplicationId]);
    expect(saved.applications[0]!.next).toMatchObject({ index: 0 });

    const second = await start(400);
    // Tokens are not kept: the old one is refused, a new one works (as a bank client recovers from a 401).
    expect((await api(second.url, t1, 'GET', `/applications/${financeApplicationId}/status`)).status).toBe(401);
    const t2 = await token(second.url);
    const status = await api(second.url, t2, 'GET', `/applications/${financeApplicationId}/status`);
    expect(status.status).toBe(200);
    expect((status.body as { status: string }).status).toMatch(/RECEIVED|UNDER_REVIEW/);
    await waitFor(() => second.control.application(financeApplicationId)?.status === 'PAID_OUT', 'PAID_OUT', 10_000);
    expect(second.control.application(financeApplicationId)!.statusHistory.map((h) => h.status)).toEqual([
      'RECEIVED',
      'UNDER_REVIEW',
      'PAID_OUT',
    ]);
    // Its webhooks still go to the webhookUrl given at creation.
    await waitFor(
      () => receiver.received.filter((r) => r.url === '/hook/abc').length >= 2,
      'the two status webhooks',
      10_000,
    );
    // The file follows: the final status is saved.
    await waitFor(
      () => loadSandboxState(file)!.applications[0]!.record.status === 'PAID_OUT',
      'the saved final status',
      5_000,
    );
  });

  test('a refresh whose banks had not answered answers after the restart', async () => {
    const first = await start(10_000, [600, 800]);
    const t1 = await token(first.url);
    const started = await api(first.url, t1, 'PUT', '/refresh', { consentId: 'consent-1' });
    expect(started.status).toBe(202);
    const { taskId } = started.body as { taskId: string };
    const banks = first.control.consent('consent-1').banks.map((b) => b.bankCode);
    await first.close();
    running.splice(0);
    expect(receiver.received.filter((r) => r.url === '/accounts')).toEqual([]);

    const second = await start(10_000);
    const events = await waitFor(
      () => {
        const got = receiver.received.filter((r) => r.url === '/accounts');
        return got.length >= banks.length ? got : undefined;
      },
      'every bank accountEvent',
      10_000,
    );
    expect(events.map((e) => (e.body as { taskId: string }).taskId)).toEqual(banks.map(() => taskId));
    expect(events.map((e) => (e.body as { bankCode: string }).bankCode).sort()).toEqual([...banks].sort());
    expect(second.control.refreshTasks()[0]!.events).toHaveLength(banks.length);
    expect(second.control.accountWebhooksSent()).toHaveLength(banks.length);
  });

  test('a file that is not a sandbox state stops the start with a message naming it', async () => {
    writeFileSync(join(dir, 'bad.json'), '{"version":99}');
    await expect(
      sandbox({ persistence: { file: join(dir, 'bad.json') } }).then((s) => running.push(s)),
    ).rejects.toThrow(/bad\.json is not a bank-sandbox state/);
    expect(readFileSync(join(dir, 'bad.json'), 'utf8')).toBe('{"version":99}');
  });

  test('the state file lives in the data folder, relative to the project root', () => {
    expect(sandboxStateFile('data', '/srv/app')).toBe('/srv/app/data/bank-sandbox.json');
    expect(sandboxStateFile('/var/lib/paylater', '/srv/app')).toBe('/var/lib/paylater/bank-sandbox.json');
  });
});
