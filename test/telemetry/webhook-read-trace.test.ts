/**
 * WebhookReadTraceInterceptor's rule with typed fakes (the real thing, in a worker on a real server, is in
 * tracing.test.ts): the read a status-changed signal causes is scheduled in that signal's trace context; nothing else.
 */
import { ROOT_CONTEXT, createContextKey, type Context } from '@opentelemetry/api';
import type { ActivityInput } from '@temporalio/workflow';
import { financeApplicationStatusChangedSignal } from '../../src/shared/finance-application';
import { isWebhookRead, WebhookReadTraceInterceptor } from '../../src/workflows/interceptors';

const TRACE = createContextKey('test trace');
const traced = (name: string): Context => ROOT_CONTEXT.setValue(TRACE, name);

function harness() {
  const scheduledIn: (string | undefined)[] = [];
  let current: Context | undefined;
  const interceptor = new WebhookReadTraceInterceptor(
    // The fake carries the trace's name in a header where the real one carries a W3C traceparent.
    (headers) => (headers.trace ? traced(String(headers.trace.data)) : undefined),
    (ctx, fn) => {
      current = ctx;
      try {
        return fn();
      } finally {
        current = undefined;
      }
    },
  );
  const signal = (name: string, trace?: string) =>
    interceptor.handleSignal(
      {
        signalName: name,
        args: [{ financeApplicationId: 'fa-1' }],
        headers: trace ? { trace: { data: trace as unknown as Uint8Array } } : {},
      },
      () => Promise.resolve(),
    );
  const schedule = (activityType: string, source?: string) =>
    interceptor.scheduleActivity(
      {
        activityType,
        args: [{ financeApplicationId: 'fa-1', source }],
        headers: {},
        seq: 1,
      } as unknown as ActivityInput,
      () => {
        scheduledIn.push(current?.getValue(TRACE) as string | undefined);
        return Promise.resolve(undefined);
      },
    );
  return { signal, schedule, scheduledIn };
}

const STATUS_CHANGED = financeApplicationStatusChangedSignal.name;

describe('WebhookReadTraceInterceptor', () => {
  it("schedules the webhook read in the last status-changed signal's trace, once", async () => {
    const h = harness();
    await h.signal(STATUS_CHANGED, 'hook-1');
    await h.signal(STATUS_CHANGED, 'hook-2'); // a burst: one read, in the last one's trace
    await h.schedule('getApplicationStatus', 'webhook');
    await h.schedule('getApplicationStatus', 'webhook'); // nothing kept any more: the loop's own context
    expect(h.scheduledIn).toEqual(['hook-2', undefined]);
  });

  it('leaves polls, other activities and other signals alone', async () => {
    const h = harness();
    await h.signal('someOtherSignal', 'other');
    await h.schedule('getApplicationStatus', 'webhook');
    await h.signal(STATUS_CHANGED, 'hook');
    await h.schedule('pollApplicationStatus');
    await h.schedule('createApplication');
    await h.schedule('getApplicationStatus', 'poll');
    await h.schedule('getApplicationStatus'); // the legacy loop's read (no source): not a webhook read
    await h.schedule('getApplicationStatus', 'webhook');
    expect(h.scheduledIn).toEqual([undefined, undefined, undefined, undefined, undefined, 'hook']);
  });

  it('forgets a trace when a later signal carries none (tracing off at the receiver)', async () => {
    const h = harness();
    await h.signal(STATUS_CHANGED, 'hook');
    await h.signal(STATUS_CHANGED);
    await h.schedule('getApplicationStatus', 'webhook');
    expect(h.scheduledIn).toEqual([undefined]);
  });

  it('recognises the webhook read by its type and source', () => {
    expect(isWebhookRead({ activityType: 'getApplicationStatus', args: [{ source: 'webhook' }] })).toBe(true);
    expect(isWebhookRead({ activityType: 'getApplicationStatus', args: [{ source: 'poll' }] })).toBe(false);
    expect(isWebhookRead({ activityType: 'pollApplicationStatus', args: [{ source: 'webhook' }] })).toBe(false);
    expect(isWebhookRead({ activityType: 'getApplicationStatus', args: [] })).toBe(false);
  });
});
