import type { IncomingMessage, ServerResponse } from 'node:http';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { z } from 'zod';
import type { Logger } from '../../../telemetry/logging';
import type { DrainSignals } from '../../drain';
import type { Metrics } from '../../metrics';
import { boundedAnswer } from '../../deadlines';
import { HttpError, isTemporalUnavailable } from '../../problem-details';
import { BodyTooLargeError, jsonContentTypeProblem, readJsonBody } from '../../json-body';
import { sendJson } from '../../send-json';
import type { WebhookAcceptedSchema, WebhookIgnoredSchema } from './schemas';

/**
 * The one receiver pipeline of the bank's webhooks (both routes go through it, so they cannot drift apart).
 * Checks, in this order, each before anything is read that it does not need:
 *   1. authenticity, from the request line and headers (401);
 *   2. content type: `application/json` or `application/*+json`, any parameters, charset UTF-8 if one is named (415);
 *   3. size (413) and content encoding (identity, gzip, deflate, br; 415 otherwise), then JSON (400);
 *   4. shape, the route's zod schema (400, with the issues);
 * then the route's Temporal call(s) under one deadline (SIGNAL_DEADLINE_MS), and one rule for the outcome:
 *   - 202 `{ status: "accepted", kind, workflowId }` once Temporal accepted the signal (counted `accepted`, or the
 *     outcome the route names: `late` for an accountEvent handed off as a late bank report);
 *   - 200 `{ status: "ignored", kind, reason }` when the target workflow is closed or was never started and the
 *     webhook carries nothing to keep (a finance webhook of a finished application): nobody waits for it, and a 4xx
 *     would only make the bank retry (logged at warn, counted `no_target`). The account route never ends here: it
 *     hands what its refresh cannot take to the late workflow. 404 is kept for paths that are no route at all;
 *   - 503 with Retry-After when Temporal cannot take it within the deadline, or by the shutdown's hard bound (the
 *     bank retries).
 * No request gets a 500 for what it carries: every check answers 4xx, and the error middleware maps the rest.
 * Hot path: one body read and JSON.parse, one zod check, one call, one counter; an accepted webhook is logged at
 * debug only (the signal is in the workflow's history and the counter counts it).
 */

/** Under the bank's per-attempt timeout (10 s): Temporal that cannot take the signal by then gets a 503, not a hang. */
export const SIGNAL_DEADLINE_MS = 4_000;

/** What the answer may take past the signal deadline: writing the 503 (the bound the README states). */
export const SIGNAL_DEADLINE_MARGIN_MS = 250;

/**
 * One Temporal call of the receiver, bounded by the signal deadline (retries included: src/temporal/grpc-retry.ts),
 * and by a timer at the deadline plus a margin in case the client library does not keep it; with `drain`, answered
 * with `drain.error()` as soon as the shutdown's hard bound (`drain.expired`) is reached.
 */
export function withinSignalDeadline<T>(
  client: Pick<Client, 'withDeadline'>,
  call: () => Promise<T>,
  drain?: { expired: AbortSignal; error: () => Error },
): Promise<T> {
  return boundedAnswer(
    client.withDeadline(Date.now() + SIGNAL_DEADLINE_MS, call),
    SIGNAL_DEADLINE_MS + SIGNAL_DEADLINE_MARGIN_MS,
    'Temporal',
    drain?.expired,
    drain?.error,
  );
}

/**
 * Thrown by a route's deliver() for a webhook that is authentic and well-formed but has nowhere to go by design
 * (an account webhook of a consent no merchant claimed): 200 `ignored`, counted under `outcome`, logged.
 */
export class WebhookIgnored extends Error {
  constructor(
    readonly outcome: string,
    readonly reason: string,
  ) {
    super(reason);
    this.name = 'WebhookIgnored';
  }
}

/** A webhook request as the receiver reads it (Express's): the path's parameters and the query, parsed. */
export type WebhookRequest = IncomingMessage & {
  params: Record<string, string | undefined>;
  query: Record<string, unknown>;
};

/** The receiver of one route: answers, or rejects with the error the error middleware answers. */
export type WebhookHandler = (req: WebhookRequest, res: ServerResponse) => Promise<void>;

/** What a route's body turned out to be, or why not. */
export type ParsedWebhook<E> =
  { ok: true; kind: string; event: E } | { ok: false; kind: string; message: string; issues: z.core.$ZodIssue[] };

/** Who a webhook is from or for, once authentic (`caller`), or why it is not (the 401's outcome label). */
export type WebhookAuthenticity<A> = { ok: true; caller: A } | { ok: false; outcome: string; message: string };

export interface WebhookReceiverSpec<E, A = void> {
  /** The metric label before the body is read. */
  kind: string;
  /** Bodies past this many bytes (decoded) are refused with 413. */
  limitBytes: number;
  /** Authenticity from the request line and headers; what it names is handed to deliver() and logIds(). */
  authenticate(req: WebhookRequest): WebhookAuthenticity<A>;
  /** The route's zod schema(s) over the parsed JSON. */
  parse(body: unknown): ParsedWebhook<E>;
  /**
   * The Temporal call(s), under one signal deadline; throws WorkflowNotFoundError when the target workflow is closed
   * or unknown. `outcome` labels the counter (default `accepted`).
   */
  deliver(event: E, caller: A): Promise<{ workflowId: string; outcome?: string }>;
  /** Ids for the log line of an ignored webhook (never secrets). */
  logIds(event: E, caller: A): Record<string, unknown>;
  /** Why an ignored webhook was ignored, as the bank sees it. */
  ignoredReason: string;
}

/** What the receiver pipeline needs: Temporal (under the signal deadline), the counter, the log, the drain. */
export interface WebhookReceiverDeps {
  client: Pick<Client, 'withDeadline'>;
  metrics: Pick<Metrics, 'webhooks'>;
  logger: Logger;
  /** The process's shutdown (src/api/drain.ts): absent, never draining (tests). */
  drain?: Pick<DrainSignals, 'expired'>;
}

const shuttingDown = () => new HttpError(503, 'This receiver is shutting down; retry', undefined, 1);

export function webhookReceiver<E, A = void>(
  deps: WebhookReceiverDeps,
  spec: WebhookReceiverSpec<E, A>,
): WebhookHandler {
  const count = (kind: string, outcome: string) => deps.metrics.webhooks.inc({ kind, outcome });

  return async (req, res) => {
    const authenticity = spec.authenticate(req);
    if (!authenticity.ok) {
      count(spec.kind, authenticity.outcome);
      throw new HttpError(401, authenticity.message);
    }
    const { caller } = authenticity;
    const contentTypeProblem = jsonContentTypeProblem(req.headers['content-type']);
    if (contentTypeProblem) {
      count(spec.kind, 'rejected_content_type');
      throw new HttpError(415, contentTypeProblem);
    }
    let body: unknown;
    try {
      body = await readJsonBody(req, spec.limitBytes);
    } catch (err) {
      count(spec.kind, err instanceof BodyTooLargeError ? 'too_large' : 'rejected_body');
      throw err;
    }
    const parsed = spec.parse(body);
    if (!parsed.ok) {
      count(parsed.kind, 'rejected_body');
      throw new HttpError(
        400,
        parsed.message,
        parsed.issues.map((i) => ({ path: i.path.join('.'), message: i.message })),
      );
    }

    const { kind, event } = parsed;
    let workflowId: string;
    let outcome: string | undefined;
    try {
      // At the shutdown's hard bound a 503 (the bank retries), never a cut connection (src/api/drain.ts).
      ({ workflowId, outcome } = await withinSignalDeadline(
        deps.client,
        () => spec.deliver(event, caller),
        deps.drain && { expired: deps.drain.expired, error: shuttingDown },
      ));
    } catch (err) {
      // Nowhere to go by design (WebhookIgnored), or a closed or unknown workflow: 200 `ignored`, so the bank does
      // not retry; counted and logged.
      const ignored =
        err instanceof WebhookIgnored
          ? { outcome: err.outcome, reason: err.reason, why: err.reason }
          : err instanceof WorkflowNotFoundError
            ? { outcome: 'no_target', reason: spec.ignoredReason, why: 'for a closed or unknown workflow' }
            : undefined;
      if (ignored) {
        count(kind, ignored.outcome);
        deps.logger.warn(
          { kind, ...spec.logIds(event, caller) },
          `${kind} webhook ${ignored.why}: acknowledged, not delivered`,
        );
        sendJson(res, 200, {
          status: 'ignored',
          kind,
          reason: ignored.reason,
        } satisfies z.infer<typeof WebhookIgnoredSchema>);
        return;
      }
      count(kind, isTemporalUnavailable(err) ? 'unavailable' : 'error');
      throw err;
    }
    count(kind, outcome ?? 'accepted');
    // Off in production: the line's fields are only gathered when it is written.
    if (deps.logger.isLevelEnabled('debug'))
      deps.logger.debug({ kind, workflowId, ...spec.logIds(event, caller) }, `${kind} webhook signalled`);
    sendJson(res, 202, { status: 'accepted', kind, workflowId } satisfies z.infer<typeof WebhookAcceptedSchema>);
  };
}

/** A zod result as a ParsedWebhook. */
export function parsedWith<E>(
  kind: string,
  message: string,
  result: { success: true; data: E } | { success: false; error: { issues: z.core.$ZodIssue[] } },
): ParsedWebhook<E> {
  return result.success
    ? { ok: true, kind, event: result.data }
    : { ok: false, kind, message, issues: result.error.issues };
}
