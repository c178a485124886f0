/**
 * MerchantTotals (src/api/budgets.ts) against a stand-in of Temporal's count: how a process adds its own starts to
 * the count it read, when it asks again, and that `alreadyHeld` is asked only at the budget. The whole stack's test is
 * test/api/merchant-budgets.test.ts.
 */
import type { Client } from '@temporalio/client';
import type { Response } from 'express';
import pino from 'pino';
import { MerchantTotals } from '../../src/api/budgets';
import { createMetrics } from '../../src/api/metrics';
import { ProblemError } from '../../src/api/problem-details';
import { testMerchants } from '../helpers/merchants';

const SHOP = 'shop';

function setup(counted: number[], ttlMs = 60_000) {
  const queries: string[] = [];
  const client = {
    workflow: {
      count: (query: string) => {
        queries.push(query);
        return Promise.resolve({ count: counted[Math.min(queries.length - 1, counted.length - 1)] });
      },
    },
  } as unknown as Client;
  const metrics = createMetrics();
  const totals = new MerchantTotals({
    client,
    merchants: testMerchants([{ name: SHOP }], { merchantsFile: { merchants: { [SHOP]: { maxConsents: 3 } } } }),
    metrics,
    logger: pino({ level: 'silent' }),
    totalsTtlMs: ttlMs,
  });
  const headers: Record<string, string[]> = {};
  const res = {
    headersSent: false,
    append: (name: string, value: string) => (headers[name] ??= []).push(value),
  } as unknown as Response;
  const admit = (alreadyHeld = () => Promise.resolve(false)) =>
    totals.admit(res, { merchantId: SHOP }, 'consents', alreadyHeld);
  return { queries, totals, admit, headers, metrics };
}

describe('MerchantTotals', () => {
  it("adds this process's starts to Temporal's count until it asks again, and refuses at the budget", async () => {
    const { queries, admit, headers, metrics } = setup([1]);
    (await admit()).settle(true); // 1 counted + 1 started
    (await admit()).settle(true); // 1 + 2
    await expect(admit()).rejects.toBeInstanceOf(ProblemError);
    expect(queries).toEqual([
      "WorkflowType = 'consentClaimWorkflow' AND MerchantId = 'shop' AND ExecutionStatus = 'Running'",
    ]);
    expect(headers).toEqual({
      'RateLimit-Policy': [expect.stringMatching(/^"merchant-consents"; q=3; pk=:[A-Za-z0-9+/=]+:$/)],
      RateLimit: ['"merchant-consents"; r=0; t=30'],
    });
    expect((await metrics.budgetRefusals.get()).values).toEqual([
      expect.objectContaining({ labels: { merchant: SHOP, budget: 'consents' }, value: 1 }),
    ]);
  });

  it('gives a start back that created nothing, and holds a pending one until it settles', async () => {
    const { admit } = setup([1]);
    const pending = await admit(); // 1 + 1 pending
    (await admit()).settle(false); // given back
    const last = await admit(); // 1 + 2 pending: at the budget now
    await expect(admit()).rejects.toBeInstanceOf(ProblemError);
    pending.settle(false);
    last.settle(true);
    (await admit()).settle(true); // 1 + 1 started + this one
    await expect(admit()).rejects.toBeInstanceOf(ProblemError);
  });

  it('asks `alreadyHeld` only at the budget, and lets such a start through', async () => {
    const { admit } = setup([3]);
    const asked: string[] = [];
    const held = () => {
      asked.push('asked');
      return Promise.resolve(true);
    };
    (await admit(held)).settle(false);
    expect(asked).toEqual(['asked']);
    const { admit: below } = setup([0]);
    (await below(held)).settle(true);
    expect(asked).toEqual(['asked']);
  });

  it('asks Temporal again after the TTL: the starts made before the question are in its answer', async () => {
    // Each admission asks again (TTL 0), and each answer holds the starts made before it: no start counted twice.
    const { queries, admit } = setup([0, 1, 2, 3], 0);
    (await admit()).settle(true);
    (await admit()).settle(true);
    (await admit()).settle(true);
    expect(queries).toHaveLength(3);
    await expect(admit()).rejects.toBeInstanceOf(ProblemError);
  });
});
