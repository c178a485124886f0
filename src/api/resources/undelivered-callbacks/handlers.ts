import type { RequestHandler, Response } from 'express';
import type { Client } from '@temporalio/client';
import {
  BulkResendRunningError,
  listUndeliveredCallbacks,
  readBulkResend,
  startBulkResend,
} from '../../../client/undelivered-callbacks';
import type { MerchantDirectory } from '../../../config/merchants';
import type {
  BulkResendProgress,
  BulkResendRange,
  UndeliveredCallback,
  UndeliveredFilter,
} from '../../../shared/undelivered-callbacks';
import type { Logger } from '../../../telemetry/logging';
import { merchantOf, operatorOf } from '../../authenticate';
import { recordAction, type AuditDeps } from '../../audit';
import { withStartDeadline, type StartDeadlineDeps } from '../../deadlines';
import { HttpError, parseInput, ProblemError, PROBLEM_TITLES, ProblemType } from '../../problem-details';
import { sendAs } from '../../openapi/describe';
import {
  BulkResendProgressSchema,
  OperatorUndeliveredQuerySchema,
  ResendRangeSchema,
  UndeliveredPageSchema,
  UndeliveredQuerySchema,
  UNDELIVERED_CALLBACKS_PATH,
} from './schemas';
import type { z } from 'zod';

export interface UndeliveredCallbackRouteDeps extends StartDeadlineDeps, AuditDeps {
  client: Client;
  taskQueue: string;
  merchants: Pick<MerchantDirectory, 'resolve' | 'ids'>;
  logger: Logger;
}

type Page = z.input<typeof UndeliveredPageSchema>;
type PageQuery = UndeliveredFilter & { pageSize: number; pageToken?: string };

/** `GET /callbacks/undelivered`: the caller's own, filtered and paged. */
export function listOwnUndelivered(deps: UndeliveredCallbackRouteDeps): RequestHandler {
  return async (req, res) => {
    const query = parseInput(UndeliveredQuerySchema, req.query, 'query');
    sendAs(res, 200, UndeliveredPageSchema, await undeliveredPage(deps.client, [callerOf(res)], query));
  };
}

/** `POST /callbacks/resend`: a bulk resend of the caller's given-up callbacks of a range. */
export function startRangeResend(deps: UndeliveredCallbackRouteDeps): RequestHandler {
  return async (req, res) => {
    if (!req.is('application/json')) throw new HttpError(415, 'Content-Type must be application/json');
    const range = parseInput(ResendRangeSchema, req.body ?? {}, 'body');
    const progress = await startResend(deps, callerOf(res), range, 'api');
    res.setHeader('Location', resendLocation(range));
    sendAs(res, 202, BulkResendProgressSchema, progress);
  };
}

/** `GET /callbacks/resend?since=&until=`: the progress of a range's bulk resend. */
export function readResend(deps: UndeliveredCallbackRouteDeps): RequestHandler {
  return async (req, res) => {
    const range = parseInput(ResendRangeSchema, req.query, 'query');
    const progress = await readBulkResend(deps.client, callerOf(res), range);
    if (!progress) throw new HttpError(404, 'No bulk resend of this range for this merchant');
    sendAs(res, 200, BulkResendProgressSchema, progress);
  };
}

/** `GET /operator/callbacks/undelivered?merchant=`: any merchant's, or every merchant's. */
export function listUndelivered(deps: UndeliveredCallbackRouteDeps): RequestHandler {
  return async (req, res) => {
    // The operator key is checked in front of /operator; without it here, refuse rather than answer.
    if (operatorOf(res) === undefined) throw new HttpError(401, 'An operator key is required');
    const { merchant, ...query } = parseInput(OperatorUndeliveredQuerySchema, req.query, 'query');
    const merchants = merchant !== undefined ? [merchant] : deps.merchants.ids();
    sendAs(res, 200, UndeliveredPageSchema, await undeliveredPage(deps.client, merchants, query));
  };
}

/** The progress page of a range (GET /callbacks/resend). */
export function resendLocation(range: BulkResendRange): string {
  const query = new URLSearchParams({
    since: range.since,
    until: range.until,
    ...(range.type ? { type: range.type } : {}),
  });
  return `${UNDELIVERED_CALLBACKS_PATH}/resend?${query.toString()}`;
}

/**
 * A page of the merchants' undelivered callbacks, merged oldest first: one ledger query per merchant. The page token
 * is the last entry's place (first attempt, key), the same for every merchant's ledger.
 */
export async function undeliveredPage(client: Client, merchantIds: readonly string[], query: PageQuery): Promise<Page> {
  const after = query.pageToken === undefined ? undefined : Buffer.from(query.pageToken, 'base64url').toString('utf8');
  const { pageSize, pageToken: _token, ...filter } = query;
  const pages = await Promise.all(
    merchantIds.map(async (merchantId) => ({
      merchantId,
      page: await listUndeliveredCallbacks(client, merchantId, {
        ...filter,
        ...(after !== undefined ? { after } : {}),
        limit: pageSize,
      }),
    })),
  );
  const all = pages
    .flatMap(({ merchantId, page }) => page.callbacks.map((c) => ({ merchantId, callback: c })))
    .sort((a, b) => (placeOf(a.callback) < placeOf(b.callback) ? -1 : 1));
  const more = all.length > pageSize || pages.some(({ page }) => page.next !== undefined);
  const shown = all.slice(0, pageSize);
  return {
    callbacks: shown.map(({ merchantId, callback }) => view(merchantId, callback)),
    nextPageToken: more && shown.length > 0 ? Buffer.from(placeOf(shown.at(-1)!.callback)).toString('base64url') : null,
    dropped: pages.reduce((sum, { page }) => sum + page.dropped, 0),
  };
}

const placeOf = (c: UndeliveredCallback) => `${c.firstAttemptAt}|${c.idempotencyKey}`;

function view(merchantId: string, c: UndeliveredCallback): Page['callbacks'][number] {
  const reference = c.event.merchantReference;
  return {
    merchantId,
    idempotencyKey: c.idempotencyKey,
    type: c.type,
    state: c.state,
    firstAttemptAt: c.firstAttemptAt,
    updatedAt: c.updatedAt,
    ...(c.attempts !== undefined ? { attempts: c.attempts } : {}),
    ...(c.httpStatus !== undefined ? { httpStatus: c.httpStatus } : {}),
    ...(c.message !== undefined ? { message: c.message } : {}),
    ...(typeof reference === 'string' ? { merchantReference: reference } : {}),
  };
}

/**
 * The merchant's bulk resend of a range: counted, recorded in the audit trail (503 and nothing sent when it cannot
 * be), then started or joined at the merchant's pace. 409 while another range's runs.
 */
export async function startResend(
  deps: UndeliveredCallbackRouteDeps,
  merchantId: string,
  range: BulkResendRange,
  via: 'api' | 'console',
): Promise<BulkResendProgress> {
  const count = await countGivenUp(deps.client, merchantId, range);
  await recordAction(deps, {
    actor: { kind: 'merchant', name: merchantId },
    action: 'callback.resend',
    target: { kind: 'merchant', id: merchantId },
    details: {
      bulk: true,
      since: range.since,
      until: range.until,
      ...(range.type ? { type: range.type } : {}),
      count,
      via,
    },
  });
  const perMinute = deps.merchants.resolve(merchantId).limits.callbackResendsPerMinute;
  try {
    await withStartDeadline(deps, 'The bulk resend', () =>
      startBulkResend(deps.client, merchantId, range, { taskQueue: deps.taskQueue, perMinute }),
    );
  } catch (err) {
    if (err instanceof BulkResendRunningError)
      throw new ProblemError(409, ProblemType.Conflict, PROBLEM_TITLES[ProblemType.Conflict], err.message);
    throw err;
  }
  deps.logger.info({ merchant: merchantId, ...range, count, via }, 'bulk callback resend started or joined');
  const progress = await readBulkResend(deps.client, merchantId, range);
  return (
    progress ?? {
      merchantId,
      since: range.since,
      until: range.until,
      ...(range.type ? { type: range.type } : {}),
      found: 0,
      delivered: 0,
      failed: 0,
      skippedRetrying: 0,
      done: false,
      failures: [],
    }
  );
}

/** How many of the merchant's callbacks of the range are given up (what a resend would send now). */
async function countGivenUp(client: Client, merchantId: string, range: BulkResendRange): Promise<number> {
  let count = 0;
  let after: string | undefined;
  for (;;) {
    const page = await listUndeliveredCallbacks(client, merchantId, {
      since: range.since,
      until: range.until,
      ...(range.type ? { type: range.type } : {}),
      state: 'given-up',
      limit: 500,
      ...(after ? { after } : {}),
    });
    count += page.callbacks.length;
    if (page.next === undefined) return count;
    after = page.next;
  }
}

function callerOf(res: Response): string {
  const merchantId = merchantOf(res);
  if (merchantId === undefined) throw new Error('merchant route reached without an authenticated merchant');
  return merchantId;
}
