/**
 * GET /applications on the whole stack: the real dev server's visibility store (SQLite), the bank sandbox over
 * HTTP, the real worker and facade. Visibility is eventually consistent: every expectation on a listing waits for
 * it (eventually), never a fixed sleep.
 */
import { randomUUID } from 'node:crypto';
import {
  financeApplicationHandle,
  getFinanceApplication,
  listFinanceApplications,
  startFinanceApplication,
  type FinanceApplicationPage,
  type FinanceApplicationSummary,
} from '../../src/client/finance-applications';
import { MAX_PAGE_SIZE } from '../../src/shared/application-search';
import { financeApplicationWorkflowType } from '../../src/shared/finance-application';
import { financeApplicationWorkflowId } from '../../src/shared/ids';
import { MerchantId, MerchantReference } from '../../src/shared/search-attributes';
import type { financeApplicationWorkflow } from '../../src/workflows/finance-application/workflow';
import { startTestStack, type TestStack } from '../helpers/stack';
import { eventually } from '../helpers/temporal';
import { TEST_MERCHANT } from '../helpers/merchants';

/** Polling is off: statuses move only when the test moves the bank (each change sends its webhook). */
const WEBHOOKS_ONLY = { fastPollIntervalMs: 3_600_000, slowPollIntervalMs: 3_600_000 };

describe('GET /applications: search through visibility (whole stack)', () => {
  let stack: TestStack;
  /** This file's references all start with it: other files' applications share the server. */
  const prefix = `srch-${randomUUID().slice(0, 8)}-`;
  const ids = new Map<string, string>();
  let beforeFirst: Date;
  let between: Date;
  let afterLast: Date;

  const list = async (query: string): Promise<FinanceApplicationPage> => {
    const res = await stack.facade(`/applications?${query}`);
    expect(res.status).toBe(200);
    return (await res.json()) as FinanceApplicationPage;
  };
  const refsOf = (page: FinanceApplicationPage) => page.applications.map((a) => a.merchantReference).sort();

  /** Waits until the listing for `query` holds exactly `refs` (visibility catches up), and returns it. */
  const listingOf = (query: string, refs: string[]) =>
    eventually(async () => {
      const page = await list(query);
      return JSON.stringify(refsOf(page)) === JSON.stringify([...refs].sort()) ? page : undefined;
    });

  const create = async (ref: string) => {
    stack.sandbox.control.setApplicationScript({ steps: [] }, { merchantReference: ref });
    const started = await startFinanceApplication(
      stack.t.client,
      TEST_MERCHANT,
      { merchantReference: ref, application: { redirectUrl: 'https://shop.example/done' }, settings: WEBHOOKS_ONLY },
      { taskQueue: stack.t.taskQueue },
    );
    ids.set(ref, started.financeApplicationId);
  };
  const first = ['a1', 'a2', 'a3'].map((s) => prefix + s);
  const second = ['b1', 'b2'].map((s) => prefix + s);

  beforeAll(async () => {
    stack = await startTestStack();
    beforeFirst = new Date();
    for (const ref of first) await create(ref);
    await new Promise((r) => setTimeout(r, 20)); // a window boundary strictly between the two batches
    between = new Date();
    await new Promise((r) => setTimeout(r, 20));
    for (const ref of second) await create(ref);
    afterLast = new Date(Date.now() + 1);
  });
  // Every answer of both listeners against the OpenAPI document (the list and the long-poll included).
  afterEach(() => stack?.openApi.expectAllMatched());
  afterAll(async () => {
    if (stack) expect(stack.openApi.checked).toBeGreaterThan(0);
    await stack?.close();
  });

  it('lists by reference prefix, with every field of the contract', async () => {
    const page = await listingOf(`referencePrefix=${prefix}`, [...first, ...second]);
    expect(page.nextPageToken).toBeNull();
    for (const item of page.applications) {
      expect(Object.keys(item).sort()).toEqual([
        'createdAt',
        'done',
        'financeApplicationId',
        'merchantReference',
        'phase',
        'status',
      ]);
      expect(item).toMatchObject<Partial<FinanceApplicationSummary>>({
        financeApplicationId: ids.get(item.merchantReference)!,
        status: 'CREATED',
        phase: 'following',
        done: false,
      });
      expect(new Date(item.createdAt).getTime()).toBeGreaterThanOrEqual(beforeFirst.getTime());
      expect(new Date(item.createdAt).getTime()).toBeLessThan(afterLast.getTime());
    }
    // Newest first.
    const times = page.applications.map((a) => a.createdAt);
    expect(times).toEqual([...times].sort().reverse());
    // A longer prefix narrows it; another prefix finds none of them.
    await listingOf(`referencePrefix=${prefix}b`, second);
    expect((await list(`referencePrefix=${prefix}zz`)).applications).toEqual([]);
  });

  it('lists by creation window: after is inclusive, before exclusive, both together', async () => {
    const q = (params: Record<string, string>) =>
      new URLSearchParams({ referencePrefix: prefix, ...params }).toString();
    await listingOf(q({ createdAfter: between.toISOString() }), second);
    await listingOf(q({ createdBefore: between.toISOString() }), first);
    await listingOf(q({ createdAfter: beforeFirst.toISOString(), createdBefore: between.toISOString() }), first);
    await listingOf(q({ createdAfter: afterLast.toISOString() }), []);
    // A time zone offset is understood (the same instant as `between`).
    const offset = new Date(between.getTime() + 2 * 3_600_000).toISOString().replace('Z', '+02:00');
    await listingOf(q({ createdAfter: offset }), second);
  });

  it('lists by status, following changes', async () => {
    const moved = [first[0]!, second[1]!];
    for (const ref of moved) stack.sandbox.control.setApplicationStatus(ids.get(ref)!, 'IN_PROGRESS');
    const page = await listingOf(`referencePrefix=${prefix}&status=IN_PROGRESS`, moved);
    expect(page.applications.every((a) => a.status === 'IN_PROGRESS')).toBe(true);
    await listingOf(
      `referencePrefix=${prefix}&status=CREATED`,
      [...first, ...second].filter((r) => !moved.includes(r)),
    );
    // Status and window together.
    await listingOf(`referencePrefix=${prefix}&status=IN_PROGRESS&createdBefore=${between.toISOString()}`, [first[0]!]);
  });

  it('pages with an opaque token until every application was listed once', async () => {
    await listingOf(`referencePrefix=${prefix}`, [...first, ...second]);
    const seen: string[] = [];
    let token: string | null = null;
    let pages = 0;
    do {
      const params = new URLSearchParams({ referencePrefix: prefix, pageSize: '2' });
      if (token) params.set('pageToken', token);
      const page = await list(params.toString());
      expect(page.applications.length).toBeLessThanOrEqual(2);
      seen.push(...page.applications.map((a) => a.merchantReference));
      token = page.nextPageToken;
      pages++;
    } while (token && pages < 10);
    expect(seen.sort()).toEqual([...first, ...second].sort());
    expect(pages).toBeGreaterThanOrEqual(3);
  });

  it('a finished application is done; one that continued as new is listed once, with its first creation time', async () => {
    const done = `${prefix}c-done`;
    await create(done);
    stack.sandbox.control.setApplicationStatus(ids.get(done)!, 'COMPLETED');
    await financeApplicationHandle(stack.t.client, TEST_MERCHANT, done).result();
    const [doneItem] = (await listingOf(`referencePrefix=${done}`, [done])).applications;
    expect(doneItem).toMatchObject({ status: 'COMPLETED', phase: 'closed', done: true });
    await eventually(async () => {
      const page = await list(`referencePrefix=${done}&status=COMPLETED`);
      return page.applications.length === 1 ? true : undefined;
    });

    const can = `${prefix}c-can`;
    stack.sandbox.control.setApplicationScript({ steps: [] }, { merchantReference: can });
    const createdBefore = new Date();
    const started = await startFinanceApplication(
      stack.t.client,
      TEST_MERCHANT,
      {
        merchantReference: can,
        application: { redirectUrl: 'https://shop.example/done' },
        settings: { ...WEBHOOKS_ONLY, continueAsNewAfterEvents: 20 },
      },
      { taskQueue: stack.t.taskQueue },
    );
    const firstRunId = (await financeApplicationHandle(stack.t.client, TEST_MERCHANT, can).describe()).runId;
    // Webhooks (each a signal and a read) until the run has continued as new at least once.
    await eventually(async () => {
      const { runId } = await financeApplicationHandle(stack.t.client, TEST_MERCHANT, can).describe();
      if (runId !== firstRunId) return true;
      await stack.sandbox.control.sendApplicationWebhooks(started.financeApplicationId, 5);
      return undefined;
    });
    expect((await getFinanceApplication(stack.t.client, TEST_MERCHANT, can)).runs).toBeGreaterThan(1);
    const page = await listingOf(`referencePrefix=${can}`, [can]);
    expect(page.applications).toHaveLength(1);
    expect(new Date(page.applications[0]!.createdAt).getTime()).toBeLessThan(
      (await financeApplicationHandle(stack.t.client, TEST_MERCHANT, can).describe()).startTime.getTime(),
    );
    expect(new Date(page.applications[0]!.createdAt).getTime()).toBeGreaterThanOrEqual(createdBefore.getTime());
    // The window is on the creation, not on the latest run's start.
    const afterCreation = new Date(new Date(page.applications[0]!.createdAt).getTime() + 1).toISOString();
    await listingOf(`referencePrefix=${can}&createdBefore=${afterCreation}`, [can]);
    await listingOf(`referencePrefix=${can}&createdAfter=${afterCreation}`, []);
  });

  it('a reference whose creation failed is not listed (it may be started again)', async () => {
    const failed = `${prefix}e-failed`;
    // The worker refuses the callback origin: the run fails before the bank is called.
    await expect(
      startFinanceApplication(
        stack.t.client,
        TEST_MERCHANT,
        {
          merchantReference: failed,
          application: { redirectUrl: 'https://shop.example/done' },
          callbackUrl: 'https://not-allowed.example/events',
        },
        { taskQueue: stack.t.taskQueue },
      ),
    ).rejects.toThrow();
    // Visibility has the failed run (waited for), and the listing leaves it out.
    await eventually(async () => {
      for await (const wf of stack.t.client.workflow.list({
        query: `WorkflowId = '${financeApplicationWorkflowId(TEST_MERCHANT, failed)}' AND ExecutionStatus = 'Failed'`,
      })) {
        return wf;
      }
      return undefined;
    });
    expect((await list(`referencePrefix=${failed}`)).applications).toEqual([]);
  });

  it('an application started before FinanceApplicationCreatedAt existed is windowed by its start time', async () => {
    const old = `${prefix}d-old`;
    stack.sandbox.control.setApplicationScript({ steps: [] }, { merchantReference: old });
    const before = new Date();
    // As the start call did before this attribute: the merchant and the reference only.
    await stack.t.client.workflow.start<typeof financeApplicationWorkflow>(financeApplicationWorkflowType, {
      workflowId: financeApplicationWorkflowId('test', old),
      taskQueue: stack.t.taskQueue,
      args: [
        {
          merchantId: 'test',
          merchantReference: old,
          application: { redirectUrl: 'https://shop.example/done' },
          settings: WEBHOOKS_ONLY,
        },
      ],
      typedSearchAttributes: [
        { key: MerchantId, value: 'test' },
        { key: MerchantReference, value: old },
      ],
    });
    const [item] = (await listingOf(`referencePrefix=${old}&createdAfter=${before.toISOString()}`, [old])).applications;
    const { startTime } = await stack.t.client.workflow.getHandle(financeApplicationWorkflowId('test', old)).describe();
    expect(item!.createdAt).toBe(startTime.toISOString());
    await listingOf(`referencePrefix=${old}&createdBefore=${before.toISOString()}`, []);
  });

  it('answers 400 on bad input, naming the parameter, and 401 without the key', async () => {
    // A real token, of a listing with other filters.
    const tokenOfOtherFilters = (await list(`referencePrefix=${prefix}&pageSize=1`)).nextPageToken;
    expect(tokenOfOtherFilters).not.toBeNull();
    const bad = [
      'status=A%27%20OR%20%27a%27%3D%27a', // A' OR 'a'='a
      'status=',
      'status=a&status=b',
      'referencePrefix=a%2Fb',
      'createdAfter=yesterday',
      'createdAfter=2026-11-21T10:00:00', // no time zone
      `createdAfter=${encodeURIComponent('2026-11-22T00:00:00Z')}&createdBefore=${encodeURIComponent('2026-11-21T00:00:00Z')}`,
      'pageSize=0',
      `pageSize=${MAX_PAGE_SIZE + 1}`,
      'pageSize=2.5',
      'pageSize=ten',
      'pageToken=not%20a%20token',
      `pageToken=${Buffer.from('{"not":"the server\'s"}').toString('base64url')}`,
      `status=CREATED&pageToken=${tokenOfOtherFilters}`,
      'statuss=APPROVED',
    ];
    for (const query of bad) {
      const res = await stack.facade(`/applications?${query}`);
      expect({ query, status: res.status }).toEqual({ query, status: 400 });
      const body = (await res.json()) as { error: string };
      expect(body).toMatchObject({ error: 'bad_request' });
      const param = query.split('&').pop()!.split('=')[0]!;
      expect(JSON.stringify(body)).toContain(param === 'createdBefore' ? 'createdAfter' : param);
    }
    const res = await fetch(`${stack.internalUrl}/applications?status=CREATED`);
    expect(res.status).toBe(401);
  });

  it('the typed client refuses a value that could escape its quotes before it reaches the server', async () => {
    await expect(
      listFinanceApplications(stack.t.client, TEST_MERCHANT, { status: "CREATED' OR 'a'='a" }),
    ).rejects.toThrow(RangeError);
    await expect(listFinanceApplications(stack.t.client, TEST_MERCHANT, {}, { pageSize: 0 })).rejects.toThrow(
      RangeError,
    );
  });
});
