import { context, type Context } from '@opentelemetry/api';
import type { Next, WorkflowInterceptors } from '@temporalio/workflow';
import type {
  ActivityInput,
  SignalInput,
  WorkflowInboundCallsInterceptor,
  WorkflowOutboundCallsInterceptor,
} from '@temporalio/workflow';
import { extractContextFromHeaders } from '@temporalio/interceptors-opentelemetry/lib/instrumentation';
import { interceptors as openTelemetryInterceptors } from '@temporalio/interceptors-opentelemetry/lib/workflow-interceptors';
import { financeApplicationStatusChangedSignal } from '../shared/finance-application';

/**
 * The workflow interceptor module of every worker (bundled: src/worker/prebuilt-workflow-bundle.ts, the tests' workers and
 * the replay tests), named by WORKFLOW_TRACING_INTERCEPTOR_MODULE. It is @temporalio/interceptors-opentelemetry's
 * (spans for the run, its signals, updates and activities) with one addition, WebhookReadTraceInterceptor.
 * Imports beyond @temporalio/workflow: the OpenTelemetry API and the SDK's tracing helpers, both bundled by the
 * SDK's own interceptors already. Neither changes a command: only the trace headers of an activity differ, which
 * replay does not compare.
 */

/** The activity a webhook asks for, with the input the workflow gives it (src/workflows/finance-application/workflow.ts). */
const WEBHOOK_READ = 'getApplicationStatus';

export function isWebhookRead(input: Pick<ActivityInput, 'activityType' | 'args'>): boolean {
  const [arg] = input.args as [{ source?: unknown } | undefined];
  return input.activityType === WEBHOOK_READ && arg?.source === 'webhook';
}

/**
 * Handlers record, the body acts (STYLE.md, 4): a webhook's signal only records it, and the status read it causes
 * is scheduled later by the main loop, whose trace is the application's. This interceptor carries the webhook's
 * trace to that read: it keeps the trace context of the last status-changed signal (the client's SignalWorkflow
 * span, from the signal's headers) and schedules the next webhook read inside it, so the read's StartActivity,
 * RunActivity and the bank's HTTP call are in the webhook's trace. Signals of a burst coalesce into one read: it
 * joins the last one's trace. A signal without trace headers (tracing off at the receiver) clears what was kept.
 * Listed before the OpenTelemetry interceptors, so their StartActivity span is opened in that context. No method
 * is async: the interceptor adds no yield to the workflow's task.
 */
export class WebhookReadTraceInterceptor implements WorkflowInboundCallsInterceptor, WorkflowOutboundCallsInterceptor {
  private webhook: Context | undefined;

  constructor(
    private readonly extract: (headers: SignalInput['headers']) => Context | undefined = extractContextFromHeaders,
    private readonly within: <T>(ctx: Context, fn: () => T) => T = (ctx, fn) => context.with(ctx, fn),
  ) {}

  handleSignal(input: SignalInput, next: Next<WorkflowInboundCallsInterceptor, 'handleSignal'>): Promise<void> {
    if (input.signalName === financeApplicationStatusChangedSignal.name) this.webhook = this.extract(input.headers);
    return next(input);
  }

  scheduleActivity(
    input: ActivityInput,
    next: Next<WorkflowOutboundCallsInterceptor, 'scheduleActivity'>,
  ): Promise<unknown> {
    const webhook = this.webhook;
    if (webhook === undefined || !isWebhookRead(input)) return next(input);
    this.webhook = undefined;
    return this.within(webhook, () => next(input));
  }
}

export const interceptors = (): WorkflowInterceptors => {
  const tracing = openTelemetryInterceptors();
  const webhookRead = new WebhookReadTraceInterceptor();
  return {
    inbound: [webhookRead, ...(tracing.inbound ?? [])],
    outbound: [webhookRead, ...(tracing.outbound ?? [])],
    internals: tracing.internals,
  };
};
