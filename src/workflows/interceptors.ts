import { context, ProxyTracerProvider, type Context, type Tracer } from '@opentelemetry/api';
import type { Next, WorkflowInterceptors } from '@temporalio/workflow';
import type {
  ActivateInput,
  ActivityInput,
  SignalInput,
  WorkflowInboundCallsInterceptor,
  WorkflowInternalsInterceptor,
  WorkflowOutboundCallsInterceptor,
} from '@temporalio/workflow';
import { extractContextFromHeaders } from '@temporalio/interceptors-opentelemetry/lib/instrumentation';
import {
  OpenTelemetryInboundInterceptor,
  OpenTelemetryInternalsInterceptor,
  OpenTelemetryOutboundInterceptor,
} from '@temporalio/interceptors-opentelemetry/lib/workflow';
// The SDK's run flags, as its own OpenTelemetry interceptors read them (their lib/workflow/workflow-imports-impl).
import { SdkFlags } from '@temporalio/workflow/lib/flags';
import { getActivator } from '@temporalio/workflow/lib/global-attributes';
import { financeApplicationStatusChangedSignal } from '../shared/finance-application';

/**
 * The workflow interceptor module of every worker (bundled: src/worker/prebuilt-workflow-bundle.ts, the tests' workers and
 * the replay tests), named by WORKFLOW_TRACING_INTERCEPTOR_MODULE. It is @temporalio/interceptors-opentelemetry's
 * (spans for the run, its signals, updates and activities) with two additions: WebhookReadTraceInterceptor, and a
 * budget of signal spans per workflow task (StatusSignalSpanBudget). Imports beyond @temporalio/workflow: the
 * OpenTelemetry API and the SDK's tracing helpers, both bundled by the SDK's own interceptors already. None changes a
 * command: only the trace headers of an activity differ, which replay does not compare.
 */

/** The activity a webhook asks for, with the input the workflow gives it (src/workflows/finance-application/workflow.ts). */
const WEBHOOK_READ = 'getApplicationStatus';

export function isWebhookRead(input: Pick<ActivityInput, 'activityType' | 'args'>): boolean {
  const [arg] = input.args as [{ source?: unknown } | undefined];
  return input.activityType === WEBHOOK_READ && arg?.source === 'webhook';
}

/**
 * Handlers record, the body acts (CONTRIBUTING.md): a webhook's signal only records it, and the status read it causes
 * is scheduled later by the main loop, whose trace is the application's. This interceptor carries the webhook's
 * trace to that read: it keeps the headers of the last status-changed signal and schedules the next webhook read
 * inside the trace context they carry (the client's SignalWorkflow span), so the read's StartActivity,
 * RunActivity and the bank's HTTP call are in the webhook's trace. Signals of a burst coalesce into one read: it
 * joins the last one's trace. A signal without trace headers (tracing off at the receiver) clears what was kept.
 * Listed before the OpenTelemetry interceptors, so their StartActivity span is opened in that context. No method
 * is async: the interceptor adds no yield to the workflow's task.
 */
export class WebhookReadTraceInterceptor implements WorkflowInboundCallsInterceptor, WorkflowOutboundCallsInterceptor {
  /** The last status-changed signal's headers: its trace context is read only when a read is scheduled in it. */
  private webhook: SignalInput['headers'] | undefined;

  constructor(
    private readonly extract: (headers: SignalInput['headers']) => Context | undefined = extractContextFromHeaders,
    private readonly within: <T>(ctx: Context, fn: () => T) => T = (ctx, fn) => context.with(ctx, fn),
  ) {}

  handleSignal(input: SignalInput, next: Next<WorkflowInboundCallsInterceptor, 'handleSignal'>): Promise<void> {
    // Kept as they came: a burst of thousands in one task costs no decoding but the last one's.
    if (input.signalName === financeApplicationStatusChangedSignal.name) this.webhook = input.headers;
    return next(input);
  }

  scheduleActivity(
    input: ActivityInput,
    next: Next<WorkflowOutboundCallsInterceptor, 'scheduleActivity'>,
  ): Promise<unknown> {
    if (this.webhook === undefined || !isWebhookRead(input)) return next(input);
    const webhook = this.extract(this.webhook);
    this.webhook = undefined;
    return webhook === undefined ? next(input) : this.within(webhook, () => next(input));
  }
}

/**
 * How many status-changed signals of one workflow task get a HandleSignal span of their own. A webhook flood (a bank
 * retrying in a loop, or posting one application's URL thousands of times) lands thousands of signals in one task,
 * and the SDK's interceptor spends about 1.3 ms on each (span, trace context, async hops): a task of 3,000 took
 * 15–22 s, past the 10 s task timeout, and the worker stopped (docs/benchmarks.md, "A webhook flood with tracing on").
 * Ordinary traffic is a few signals a task.
 */
export const STATUS_SIGNAL_SPANS_PER_TASK = 20;

/** A tracer whose spans record nothing (the OpenTelemetry API's no-op, as with no provider registered). */
const NON_RECORDING_TRACER: Tracer = new ProxyTracerProvider().getTracer('paylater-unrecorded-signals');

/** The SDK's inbound interceptor with a tracer that records nothing: the same calls and yields, no span kept. */
class NonRecordingInboundInterceptor extends OpenTelemetryInboundInterceptor {
  protected override readonly tracer: Tracer = NON_RECORDING_TRACER;
}

/**
 * Whether this run's SDK flags say the SDK's inbound interceptor adds no yield before a signal's handler (every run
 * begun on SDK 1.13.2 or later: the flag is on for them). Then a handler called directly runs exactly when it would
 * have run inside the interceptor's span (synchronously, in the job's turn).
 */
function signalSpansAddNoYield(): boolean {
  return getActivator().hasFlag(SdkFlags.OpenTelemetryInterceporsAvoidsExtraYields);
}

/**
 * The SDK's inbound interceptor, with a budget: in each workflow task, the first STATUS_SIGNAL_SPANS_PER_TASK
 * status-changed signals are traced as the SDK traces them, and the rest are handed to the workflow directly, with no
 * span. Every other signal, update, query and the run itself are traced as before. Either way each handler runs in
 * its job's turn, in order, so every command is what it was: only how many spans are exported differs. For a run
 * whose flags say the SDK's interceptor yields first (begun before SDK 1.13.2; none here, but histories are data),
 * the rest go through the same interceptor with a tracer that records nothing instead: the same yields, no span.
 * The budget restarts at each activation (the internals hook `activate`, one call per job batch of a task).
 */
export class StatusSignalSpanBudget implements WorkflowInboundCallsInterceptor, WorkflowInternalsInterceptor {
  private activation: ActivateInput['activation'] | undefined;
  private spans = 0;

  constructor(
    private readonly traced: Required<
      Pick<
        WorkflowInboundCallsInterceptor,
        'execute' | 'handleSignal' | 'handleUpdate' | 'validateUpdate' | 'handleQuery'
      >
    > = new OpenTelemetryInboundInterceptor(),
    private readonly unrecorded: Required<
      Pick<WorkflowInboundCallsInterceptor, 'handleSignal'>
    > = new NonRecordingInboundInterceptor(),
    private readonly budget = STATUS_SIGNAL_SPANS_PER_TASK,
    private readonly addsNoYield: () => boolean = signalSpansAddNoYield,
  ) {}

  activate(input: ActivateInput, next: Next<WorkflowInternalsInterceptor, 'activate'>): void {
    if (input.activation !== this.activation) {
      this.activation = input.activation;
      this.spans = 0;
    }
    next(input);
  }

  handleSignal(input: SignalInput, next: Next<WorkflowInboundCallsInterceptor, 'handleSignal'>): Promise<void> {
    if (input.signalName !== financeApplicationStatusChangedSignal.name) return this.traced.handleSignal(input, next);
    if (this.spans < this.budget) {
      this.spans++;
      return this.traced.handleSignal(input, next);
    }
    return this.addsNoYield() ? next(input) : this.unrecorded.handleSignal(input, next);
  }

  execute: WorkflowInboundCallsInterceptor['execute'] = (input, next) => this.traced.execute(input, next);
  handleUpdate: WorkflowInboundCallsInterceptor['handleUpdate'] = (input, next) =>
    this.traced.handleUpdate(input, next);
  validateUpdate: WorkflowInboundCallsInterceptor['validateUpdate'] = (input, next) =>
    this.traced.validateUpdate(input, next);
  handleQuery: WorkflowInboundCallsInterceptor['handleQuery'] = (input, next) => this.traced.handleQuery(input, next);
}

export const interceptors = (): WorkflowInterceptors => {
  // @temporalio/interceptors-opentelemetry's interceptors() (lib/workflow-interceptors), its inbound one budgeted.
  const signalSpans = new StatusSignalSpanBudget();
  const webhookRead = new WebhookReadTraceInterceptor();
  return {
    inbound: [webhookRead, signalSpans],
    outbound: [webhookRead, new OpenTelemetryOutboundInterceptor()],
    internals: [signalSpans, new OpenTelemetryInternalsInterceptor()],
  };
};
