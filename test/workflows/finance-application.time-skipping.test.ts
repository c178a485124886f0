import { randomUUID } from 'node:crypto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import type { Activities } from '../../src/activities/types';
import type { FinanceApplicationInput } from '../../src/shared/finance-application';
import { financeApplicationWorkflowId } from '../../src/shared/ids';
import { financeApplicationWorkflow } from '../../src/workflows/finance-application';
import { bundleWorkflows, createTimeSkippingEnv } from '../helpers/temporal';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/**
 * An application lives for days: real timers of hours and a 30-day deadline, on the time-skipping test server,
 * with typed fake activities (the test is about the workflow's timing logic, not the bank).
 */
describe('financeApplicationWorkflow over days (time-skipping test server)', () => {
  let env: TestWorkflowEnvironment;
  let bundle: Awaited<ReturnType<typeof bundleWorkflows>>;
  beforeAll(async () => {
    env = await createTimeSkippingEnv();
    bundle = await bundleWorkflows(require.resolve('../../src/workflows'));
  });
  afterAll(async () => env?.teardown());

  function fakeBank(statuses: string[]) {
    let reads = 0;
    const activities: Activities = {
      createApplication: jest.fn(() => Promise.resolve({ financeApplicationId: 'fa-1', status: 'CREATED' })),
      getApplicationStatus: jest.fn(() =>
        Promise.resolve({ status: statuses[Math.min(reads++, statuses.length - 1)]! }),
      ),
      startRefresh: jest.fn(),
      notifyMerchant: jest.fn(),
    };
    return activities;
  }

  async function run(activities: Activities, input: Omit<FinanceApplicationInput, 'application'>) {
    const taskQueue = `ts-${randomUUID()}`;
    const worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue,
      workflowBundle: bundle,
      activities,
    });
    return worker.runUntil(
      env.client.workflow.execute(financeApplicationWorkflow, {
        taskQueue,
        workflowId: financeApplicationWorkflowId(input.merchantReference),
        args: [{ ...input, application: { redirectUrl: 'https://shop.example/back' } }],
      }),
    );
  }

  it('polls on its fallback timer for days and ends on the terminal status', async () => {
    const statuses = [...Array<string>(9).fill('IN_PROGRESS'), 'APPROVED', 'COMPLETED'];
    const activities = fakeBank(statuses);
    const result = await run(activities, {
      merchantReference: `days-${randomUUID()}`,
      settings: { fastPollIntervalMs: 6 * HOUR, slowPollIntervalMs: DAY },
    });
    expect(result).toMatchObject({ done: true, outcome: 'terminal', status: 'COMPLETED', webhooksLive: false });
    expect(result.history.map((h) => [h.status, h.source])).toEqual([
      ['CREATED', 'create'],
      ['IN_PROGRESS', 'poll'],
      ['APPROVED', 'poll'],
      ['COMPLETED', 'poll'],
    ]);
    expect(activities.getApplicationStatus).toHaveBeenCalledTimes(11);
    // Eleven polls six hours apart: the workflow's own clock says two and a half days went by.
    const span = Date.parse(result.history.at(-1)!.at) - Date.parse(result.history[0]!.at);
    expect(span).toBeGreaterThanOrEqual(11 * 6 * HOUR);
  });

  it('stops following an application that never ends at its 30-day deadline', async () => {
    const activities = fakeBank(['IN_PROGRESS']);
    const result = await run(activities, {
      merchantReference: `deadline-${randomUUID()}`,
      settings: { fastPollIntervalMs: DAY, slowPollIntervalMs: DAY },
    });
    expect(result).toMatchObject({ done: true, outcome: 'deadline', status: 'IN_PROGRESS' });
    // The deadline is 30 days after the start (the first status is recorded just after it).
    const deadlineAfterCreation = Date.parse(result.deadlineAt) - Date.parse(result.history[0]!.at);
    expect(deadlineAfterCreation).toBeLessThanOrEqual(30 * DAY);
    expect(deadlineAfterCreation).toBeGreaterThan(30 * DAY - HOUR);
    expect((activities.getApplicationStatus as jest.Mock).mock.calls.length).toBeGreaterThanOrEqual(29);
  });
});
