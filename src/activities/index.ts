import { activityInfo, cancellationSignal, log } from '@temporalio/activity';
import { ApplicationFailure, ApplicationFailureCategory } from '@temporalio/common';
import type { Dispatcher } from 'undici';
import { withoutWebhookUrl, type CreateApplicationRequest } from '../shared/bank-wire';
import { financeApplicationWebhookUrl } from '../security/webhook-hash';
import type { BankClient } from './bank/bank-client';
import { toApplicationFailure } from './failures';
import { pollDelayMs } from '../shared/poll-policy';
import { callbackEventLabel } from '../shared/metric-names';
import {
  BANK_READ_FAILED,
  BankFailureType,
  CALLBACK_GIVEN_UP,
  CALLBACK_NOT_ALLOWED,
  CALLBACK_REJECTED,
  CALLBACK_UNAVAILABLE,
  NOT_THIS_REFERENCES,
  POLL_STATUS_UNCHANGED,
} from '../shared/failure-types';
import { postMerchantCallback } from './merchant-callback';
import { CURRENT_CALLBACK_PAYLOAD_VERSION, type CallbackPayloadVersion } from './callback-payload';
import { checkCallbackUrl, NO_CALLBACKS, type CallbackAllowList } from '../security/callback-url';
import { CallbackSigner } from '../security/callback-signature';
import { callbackSigningSecretsAt, derivesSecrets } from '../security/merchant-signing-secret';
import { INITIAL_SECRET_GENERATIONS, type SecretGeneration } from '../shared/merchant-secrets';
import type { Activities } from './types';
import { WebhookEvidence } from './webhook-evidence';
import type { ReadPacer } from './bank/read-pacer';
import type { ApplicationRecords } from '../temporal/application-records';
import {
  callbackRetry,
  DEFAULT_CALLBACK_RETRY_WINDOW_MS,
  RESEND_WORKFLOW_TYPES,
  type CallbackReport,
  type UndeliveredPage,
  type UndeliveredPageRequest,
} from '../shared/undelivered-callbacks';
import { formatDuration, parseDurationMs } from '../shared/application-settings';

export type { Activities } from './types';
export { BankClient, type BankClientOptions, type CallOptions } from './bank/bank-client';
export {
  createBankClient,
  type BankClientHandle,
  type BankPoolOptions,
  type CreateBankClientOptions,
} from './bank/create-bank-client';
export { ClientCredentialsTokenProvider, type TokenProvider, type TokenRequestOutcome } from './bank/token-provider';
export type { BankLogger } from './bank/logger';
export { callbackDispatchers, createCallbackDispatcher } from './merchant-callback';
export { toApplicationFailure } from './failures';
export { WebhookEvidence } from './webhook-evidence';
export { ReadPacer } from './bank/read-pacer';

export interface ActivityDeps {
  /** The bank client (createBankClient(...).client); a typed fake works too. */
  bank: Pick<BankClient, 'createApplication' | 'getApplicationStatus' | 'startRefresh'>;
  webhooks: {
    /** PUBLIC_BASE_URL: where the bank reaches our webhook receiver. */
    publicBaseUrl: string;
    /** WEBHOOK_HASH_SECRET: keys the hash in each application's webhookUrl. */
    hashSecret: string;
  };
  /**
   * Merchant callbacks: where they may go (CALLBACK_ALLOWED_ORIGINS), the Standard Webhooks secrets that sign
   * them (CALLBACK_SIGNING_SECRETS; every one signs) and their body's shape (CALLBACK_PAYLOAD_VERSION, default the
   * current). Absent: every callback URL is refused.
   */
  callbacks?: {
    allowList: CallbackAllowList;
    signingSecrets: readonly string[];
    /** Masters a merchant's own secrets are derived from (CALLBACK_SIGNING_MASTER_SECRETS), when signingSecrets is empty. */
    signingMasters?: readonly string[];
    payloadVersion?: CallbackPayloadVersion;
  };
  /**
   * Each merchant's callback allow-list and signing secrets (MERCHANTS_FILE over the globals): a callback is checked
   * against, and signed with, its merchant's. Absent: `callbacks` for every merchant.
   */
  merchants?: { resolve(merchantId: string): CallbackMerchant };
  /**
   * Dispatcher for merchant callbacks (createCallbackDispatcher({ allowList }): with the DNS rebinding guard), or
   * one per merchant (its allow-list's guard); undici's global one when absent.
   */
  callbackDispatcher?: Dispatcher | ((merchant: CallbackMerchant) => Dispatcher);
  /**
   * A merchant's secret generations (src/client/merchant-secrets.ts readCallbackSecretGenerations: one describe),
   * read at each callback of a merchant whose secrets are derived, so every worker signs with every generation still
   * valid as soon as the merchant rotated. Absent: generation 1 only.
   */
  callbackSecretGenerations?: (merchantId: string) => Promise<readonly SecretGeneration[]>;
  /** Deadline of one merchant callback request (default 10 s). */
  callbackTimeoutMs?: number;
  /** Worker-wide knowledge that webhooks reach us (one per worker process; a fresh one when absent). */
  webhookEvidence?: WebhookEvidence;
  /** Spaces this process's status reads (BANK_MAX_READS_PER_SECOND); unpaced when absent. */
  readPacer?: ReadPacer;
  /** What the activities count (the worker's createWorkerMetrics, src/worker/metrics.ts); nothing when absent. */
  metrics?: ActivityMetrics;
  /**
   * Which workflows record a bank application id as their own (src/temporal/application-records.ts): a duplicate is
   * believed only when no other does. Absent: confirmation reads ask the bank alone (unit tests).
   */
  applications?: ApplicationRecords;
  /**
   * Each merchant's ledger of undelivered callbacks (src/client/undelivered-callbacks.ts callbackLedgerAccess: a
   * signal-with-start, a query). Absent: nothing reported (unit tests), and the bulk resend finds nothing.
   */
  callbackLedger?: {
    report(merchantId: string, report: CallbackReport): Promise<void>;
    read(merchantId: string, request: UndeliveredPageRequest): Promise<UndeliveredPage>;
  };
}

/** One merchant as its callbacks need it (a MerchantDirectory entry, src/config/merchants.ts, is one). */
export interface CallbackMerchant {
  id: string;
  callbacks: {
    allowList: CallbackAllowList;
    signingSecrets: readonly string[];
    /** Present: the secrets are derived from these masters and the merchant's generations (signingSecrets empty). */
    signingMasters?: readonly string[];
    /** The body's shape (src/activities/callback-payload.ts); absent: the current version. */
    payloadVersion?: CallbackPayloadVersion;
    /** How long a callback is retried from its first scheduling (ms); absent: DEFAULT_CALLBACK_RETRY_WINDOW_MS. */
    retryWindowMs?: number;
  };
}

/** The counters the activities increment, passed in rather than imported from the worker. */
export interface ActivityMetrics {
  merchantCallbacks: { inc(labels: { event: string; outcome: string }): void };
  /** Callbacks given up at the end of their merchant's retry window (paylater_callbacks_given_up_total). */
  callbacksGivenUp?: { inc(labels: { merchant: string }): void };
}

/**
 * The worker's activities (dependencies passed in, no singletons, no process.env).
 * Each one calls the bank with the activity's cancellation signal, logs through Temporal's activity logger
 * (workflow id attached) with the bank's ids, and turns bank errors into ApplicationFailure in one place.
 */
export function createActivities(deps: ActivityDeps): Activities {
  return { ...bankActivities(deps), ...callbackActivities(deps) };
}

type BankActivities = Pick<
  Activities,
  'createApplication' | 'getApplicationStatus' | 'pollApplicationStatus' | 'startRefresh' | 'readClock'
>;

/** The activities that call the bank (and the clock the workflows read through one). */
function bankActivities(deps: ActivityDeps): BankActivities {
  const { bank, webhooks } = deps;
  const evidence = deps.webhookEvidence ?? new WebhookEvidence();
  return {
    async createApplication({ merchantId, merchantReference, application }) {
      const webhookUrl = financeApplicationWebhookUrl(
        webhooks.publicBaseUrl,
        webhooks.hashSecret,
        merchantReference,
        merchantId,
      );
      // Ours wins over any webhookUrl the merchant sent: the receiver only accepts the hashed one. redirectUrl
      // is checked by the merchant facade; its requiredness is the bank's call (not shown), so a 4xx says it.
      const body = { ...application, webhookUrl } as CreateApplicationRequest;
      try {
        const answer = await bank.createApplication(body, { signal: cancellationSignal() });
        // The bank may echo our webhookUrl: its hash (the URL's last segment) stays out of the workflow's state.
        const created = withoutWebhookUrl(answer, webhookUrl.slice(webhookUrl.lastIndexOf('/') + 1));
        log.info('Finance application created', {
          merchantReference,
          financeApplicationId: created.financeApplicationId,
          status: created.status,
        });
        return created;
      } catch (err) {
        throw failed('createApplication', err, { merchantReference });
      }
    },

    async getApplicationStatus({ financeApplicationId, merchantReference, source, confirmsDuplicate }) {
      if (source === 'webhook') evidence.record();
      // Before the bank is asked: the bank knows every merchant's applications, and that one exists there says
      // nothing about whose it is.
      if (confirmsDuplicate && deps.applications) await notAnotherApplication(deps.applications, financeApplicationId);
      try {
        await deps.readPacer?.wait(cancellationSignal());
        const status = await bank.getApplicationStatus(financeApplicationId, { signal: cancellationSignal() });
        // Debug: reads are frequent; status changes are recorded by the workflow itself.
        log.debug('Finance application status read', {
          merchantReference,
          financeApplicationId,
          status: status.status,
          source,
        });
        return { ...status, webhooksKnown: evidence.known(), readAt: new Date().toISOString() };
      } catch (err) {
        throw failed('getApplicationStatus', err, { merchantReference, financeApplicationId });
      }
    },

    async pollApplicationStatus({
      financeApplicationId,
      merchantReference,
      seenStatuses,
      quietSince,
      webhooksLive,
      policy,
    }) {
      const info = activityInfo();
      const webhooksKnown = webhooksLive || evidence.known();
      // The server's clock (as quietSince, the workflow's): no skew between hosts, and test servers that skip time.
      const delayMs = pollDelayMs(
        policy,
        info.currentAttemptScheduledTimestampMs - Date.parse(quietSince),
        webhooksKnown,
      );
      const again = (message: string) =>
        ApplicationFailure.create({
          type: POLL_STATUS_UNCHANGED,
          message,
          nextRetryDelay: delayMs,
          // Expected: no error log, no failure metric for an unchanged status.
          category: ApplicationFailureCategory.BENIGN,
        });
      // The first attempt runs as soon as the poll is scheduled: it only sets the time of the first read.
      if (info.attempt === 1) throw again(`first read in ${delayMs} ms`);
      let status;
      try {
        await deps.readPacer?.wait(cancellationSignal());
        status = await bank.getApplicationStatus(financeApplicationId, { signal: cancellationSignal() });
      } catch (err) {
        const failure = toApplicationFailure(err);
        // The bank no longer knows the application: polling at this pace cannot help, the workflow decides.
        if (failure instanceof ApplicationFailure && failure.type === BankFailureType.ApplicationUnknown) throw failure;
        log.warn('Poll read failed; polling goes on', {
          merchantReference,
          financeApplicationId,
          ...failureAttributes(failure),
        });
        // Polling never gives up on a bank error: the next read comes at the policy's pace (or a 429's
        // Retry-After when that is longer); a webhook or the deadline ends the wait sooner.
        const retryAfterMs = failure instanceof ApplicationFailure ? Number(failure.nextRetryDelay ?? 0) : 0;
        throw ApplicationFailure.create({
          type: (failure instanceof ApplicationFailure ? failure.type : undefined) ?? BANK_READ_FAILED,
          message: failure instanceof Error ? failure.message : String(failure),
          nextRetryDelay: Math.max(delayMs, Number.isFinite(retryAfterMs) ? retryAfterMs : 0),
          details: (failure instanceof ApplicationFailure ? failure.details : undefined) ?? undefined,
        });
      }
      if (seenStatuses.includes(status.status))
        throw again(`status ${status.status} unchanged; next read in ${delayMs} ms`);
      log.debug('Poll found a new status', { merchantReference, financeApplicationId, status: status.status });
      return { ...status, webhooksKnown, readAt: new Date().toISOString() };
    },

    async startRefresh({ consentId }) {
      try {
        const { taskId } = await bank.startRefresh(consentId, { signal: cancellationSignal() });
        log.info('Account refresh started', { consentId, taskId });
        return { taskId };
      } catch (err) {
        throw failed('startRefresh', err, { consentId });
      }
    },

    readClock() {
      return Promise.resolve({ nowMs: Date.now() });
    },
  };
}

/** Each merchant's callback settings and signer (explicit secrets, or derived at each callback). */
function callbackMerchants(deps: ActivityDeps) {
  const fallback: CallbackMerchant = {
    id: '',
    callbacks: {
      allowList: deps.callbacks?.allowList ?? NO_CALLBACKS,
      signingSecrets: deps.callbacks?.signingSecrets ?? [],
      signingMasters: deps.callbacks?.signingMasters,
      payloadVersion: deps.callbacks?.payloadVersion,
    },
  };
  const merchantOf = (merchantId: string): CallbackMerchant =>
    deps.merchants ? deps.merchants.resolve(merchantId) : { ...fallback, id: merchantId };
  // One signer per merchant with explicit secrets (fixed for the process's life); derived ones at each callback.
  const signers = new Map<string, CallbackSigner>();
  const signerOf = async (merchant: CallbackMerchant): Promise<CallbackSigner> => {
    if (!derivesSecrets(merchant.callbacks)) {
      let signer = signers.get(merchant.id);
      if (!signer) signers.set(merchant.id, (signer = new CallbackSigner(merchant.callbacks.signingSecrets)));
      return signer;
    }
    let generations: readonly SecretGeneration[];
    try {
      generations = deps.callbackSecretGenerations
        ? await deps.callbackSecretGenerations(merchant.id)
        : INITIAL_SECRET_GENERATIONS;
    } catch (err) {
      // Never sent with a generation missing: Temporal will answer again, and the attempt is retried.
      throw ApplicationFailure.create({
        type: CALLBACK_UNAVAILABLE,
        message: `the merchant's signing secret generations could not be read: ${err instanceof Error ? err.message : String(err)}`,
      });
    }
    return new CallbackSigner(callbackSigningSecretsAt(merchant.callbacks, merchant.id, generations, Date.now()));
  };
  const callbackSettingsOf = (merchantId: string) => {
    const merchant = merchantOf(merchantId);
    const dispatcher =
      typeof deps.callbackDispatcher === 'function' ? deps.callbackDispatcher(merchant) : deps.callbackDispatcher;
    return {
      merchant,
      allowList: merchant.callbacks.allowList,
      dispatcher,
      payloadVersion: merchant.callbacks.payloadVersion ?? CURRENT_CALLBACK_PAYLOAD_VERSION,
    };
  };

  return { signerOf, callbackSettingsOf };
}

type CallbackActivities = Pick<Activities, 'checkCallbackUrl' | 'notifyMerchant' | 'readUndeliveredCallbacks'>;

/** The activities of merchant callbacks: each merchant's allow-list, signing secrets and ledger. */
function callbackActivities(deps: ActivityDeps): CallbackActivities {
  const { signerOf, callbackSettingsOf } = callbackMerchants(deps);
  return {
    // A pure decision on this worker's configuration; the workflow logs and acts on a refusal.
    checkCallbackUrl({ url, merchantId }) {
      return Promise.resolve(checkCallbackUrl(url, callbackSettingsOf(merchantId).allowList));
    },

    async notifyMerchant({ merchantId, url, idempotencyKey, event }) {
      const target = safeOrigin(url);
      const { merchant, allowList, dispatcher, payloadVersion } = callbackSettingsOf(merchantId);
      const info = activityInfo();
      // A resend (console, bulk) has its own short retries; only a callback's own delivery runs the retry window.
      const resend = RESEND_WORKFLOW_TYPES.includes(info.workflowType ?? '');
      const report = (outcome: CallbackReport['outcome'], extra: Partial<CallbackReport> = {}) =>
        deps.callbackLedger?.report(merchant.id, {
          idempotencyKey,
          outcome,
          at: new Date().toISOString(),
          ...(outcome === 'delivered'
            ? {}
            : {
                type: typeof event.type === 'string' ? event.type : 'unknown',
                url,
                event,
                firstAttemptAt: new Date(info.scheduledTimestampMs).toISOString(),
                attempts: info.attempt,
                ...(info.workflowExecution ? { workflowId: info.workflowExecution.workflowId } : {}),
              }),
          ...extra,
        });
      try {
        // A URL the allow-list refuses is refused below before anything is read or signed.
        const signer = checkCallbackUrl(url, allowList).allowed ? await signerOf(merchant) : new CallbackSigner([]);
        const result = await postMerchantCallback(
          { url, idempotencyKey, event },
          {
            allowList,
            signer,
            dispatcher,
            timeoutMs: deps.callbackTimeoutMs,
            signal: cancellationSignal(),
            payloadVersion,
            // The event's time when it has no `at`: its first scheduling, the same on every retry.
            occurredAt: new Date(info.scheduledTimestampMs),
          },
        );
        log.info('Merchant notified', { target, idempotencyKey, payloadVersion, status: result.status });
        deps.metrics?.merchantCallbacks.inc({ event: callbackEventLabel(event.type), outcome: 'delivered' });
        // Only a callback that failed before (or a resend of one) can be in the ledger. Best effort: the merchant
        // has it, and a stale entry is at worst sent again with the same webhook-id.
        if (info.attempt > 1 || resend)
          await report('delivered')?.catch((err: unknown) => ledgerUnreported(err, idempotencyKey));
        return { ...result, ...attemptOf() };
      } catch (err) {
        deps.metrics?.merchantCallbacks.inc({ event: callbackEventLabel(event.type), outcome: callbackOutcome(err) });
        log.warn('Merchant notification failed', { target, idempotencyKey, ...failureAttributes(err) });
        if (resend || !retriedByUs(err)) throw withAttempt(err);
        const failure = err as ApplicationFailure;
        const windowMs = merchant.callbacks.retryWindowMs ?? DEFAULT_CALLBACK_RETRY_WINDOW_MS;
        const decision = callbackRetry({
          attempt: info.attempt,
          firstScheduledMs: info.scheduledTimestampMs,
          nowMs: Date.now(),
          windowMs,
          requestedDelayMs: delayMs(failure.nextRetryDelay),
        });
        const { status } = (failure.details?.[0] ?? {}) as { status?: number };
        const particulars = { ...(typeof status === 'number' ? { httpStatus: status } : {}), message: failure.message };
        if (!decision.giveUp) {
          if (info.attempt === 1)
            await report('retrying', particulars)?.catch((e: unknown) => ledgerUnreported(e, idempotencyKey));
          throw withAttempt(retriedAfter(failure, decision.nextRetryDelayMs));
        }
        // The give-up is recorded in the ledger before it is final: unrecorded, the attempt is tried again later.
        try {
          await report('given-up', particulars);
        } catch (e) {
          ledgerUnreported(e, idempotencyKey);
          throw withAttempt(retriedAfter(failure, 30_000));
        }
        deps.metrics?.callbacksGivenUp?.inc({ merchant: merchant.id || 'unknown' });
        log.warn('Merchant callback given up: its retry window passed', {
          target,
          idempotencyKey,
          retryWindow: formatDuration(windowMs),
        });
        throw withAttempt(
          ApplicationFailure.create({
            type: CALLBACK_GIVEN_UP,
            message: `given up after the retry window (${formatDuration(windowMs)}): ${failure.message}`,
            nonRetryable: true,
            details: failure.details ?? undefined,
          }),
        );
      }
    },

    async readUndeliveredCallbacks({ merchantId, request }) {
      if (!deps.callbackLedger) return { callbacks: [], dropped: 0 };
      return await deps.callbackLedger.read(merchantId, request);
    },
  };
}

/**
 * Throws NOT_THIS_REFERENCES when a workflow other than the calling one records `financeApplicationId` as its own, or
 * when the id cannot be looked up (a quote in it): the webhook naming it is then no evidence of a duplicate. Our own
 * workflow id is the same across its runs and continue-as-new; a reference started again keeps it too.
 */
async function notAnotherApplication(records: ApplicationRecords, financeApplicationId: string): Promise<void> {
  const own = activityInfo().workflowExecution?.workflowId;
  let others: string[];
  try {
    others = (await records.workflowsRecording(financeApplicationId)).filter((id) => id !== own);
  } catch (err) {
    if (!(err instanceof RangeError)) throw err; // visibility unavailable: retried, then unchecked
    others = ['(an id no query can name)'];
  }
  if (others.length === 0) return;
  log.warn('Another application of this service named on this application’s webhook URL: not a duplicate', {
    otherFinanceApplicationId: financeApplicationId,
  });
  throw ApplicationFailure.create({
    type: NOT_THIS_REFERENCES,
    message: 'That financeApplicationId is not this reference’s: another application of this service records it',
    nonRetryable: true,
    category: ApplicationFailureCategory.BENIGN,
  });
}

/** Logs the failure with the bank's ids and returns what the activity should throw. */
function failed(operation: string, err: unknown, ids: Record<string, string>): unknown {
  const failure = toApplicationFailure(err);
  log.warn('Bank call failed', { operation, ...ids, ...failureAttributes(failure) });
  return failure;
}

function failureAttributes(err: unknown): Record<string, unknown> {
  if (err instanceof ApplicationFailure) {
    const [first] = err.details ?? [];
    const status = (first as { status?: unknown } | undefined)?.status;
    return { failureType: err.type, nonRetryable: err.nonRetryable, status, error: err.message };
  }
  return { error: err instanceof Error ? err.message : String(err) };
}

/** This attempt's number, for the workflow's record of the delivery (absent outside an activity: unit tests). */
function attemptOf(): { attempt?: number } {
  try {
    return { attempt: activityInfo().attempt };
  } catch {
    return {};
  }
}

/**
 * The callback's failure with this attempt's number beside the merchant's HTTP status in its details
 * (src/shared/merchant-callbacks.ts callbackFailureDetails): the workflow records both when it gives up.
 */
function withAttempt(err: unknown): unknown {
  const { attempt } = attemptOf();
  if (!(err instanceof ApplicationFailure) || attempt === undefined) return err;
  const [first] = err.details ?? [];
  return ApplicationFailure.create({
    type: err.type ?? undefined,
    message: err.message,
    nonRetryable: err.nonRetryable ?? false,
    nextRetryDelay: err.nextRetryDelay ?? undefined,
    category: err.category ?? undefined,
    cause: err.cause,
    details: [{ ...(first !== null && typeof first === 'object' ? first : {}), attempt }],
  });
}

/** Label value of a failed callback attempt: its failure type, as a bounded set. */
function callbackOutcome(err: unknown): string {
  if (isCancellationError(err)) return 'cancelled';
  const type = err instanceof ApplicationFailure ? err.type : undefined;
  if (type === CALLBACK_UNAVAILABLE) return 'unavailable';
  if (type === CALLBACK_REJECTED) return 'rejected';
  if (type === CALLBACK_NOT_ALLOWED) return 'not_allowed';
  return 'error';
}

/** A failure Temporal would retry: the retry window decides instead (a merchant's 5xx, timeout, network). */
function retriedByUs(err: unknown): boolean {
  return err instanceof ApplicationFailure && !err.nonRetryable && err.type === CALLBACK_UNAVAILABLE;
}

/** The same failure, retried after `ms`. */
function retriedAfter(err: ApplicationFailure, ms: number): ApplicationFailure {
  return ApplicationFailure.create({
    type: err.type ?? undefined,
    message: err.message,
    nextRetryDelay: ms,
    cause: err.cause,
    details: err.details ?? undefined,
  });
}

/** A failure's nextRetryDelay in ms (the merchant's Retry-After), when it set one. */
function delayMs(delay: ApplicationFailure['nextRetryDelay']): number | undefined {
  if (delay === undefined || delay === null) return undefined;
  if (typeof delay === 'number') return delay;
  if (typeof delay === 'string') return parseDurationMs(delay);
  return undefined;
}

function ledgerUnreported(err: unknown, idempotencyKey: string): void {
  log.warn('Undelivered-callback ledger not told', {
    idempotencyKey,
    error: err instanceof Error ? err.message : String(err),
  });
}

function isCancellationError(err: unknown): boolean {
  return err instanceof Error && (err.name === 'AbortError' || err.name === 'CancelledFailure');
}

/** Callback URLs may carry credentials or tokens in their path or query: log the origin only. */
function safeOrigin(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return '(invalid url)';
  }
}
