import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import type { LookupFunction } from 'node:net';
import { ApplicationFailure } from '@temporalio/common';
import { Agent, request, type Dispatcher } from 'undici';
import {
  checkCallbackUrl,
  NO_CALLBACKS,
  permitsResolvedAddress,
  type CallbackAllowList,
} from '../security/callback-url';
import { CALLBACK_SIGNING_SECRETS, type CallbackSigner } from '../security/callback-signature';
import { CALLBACK_SIGNING_MASTER_SECRETS } from '../security/merchant-signing-secret';
import { CALLBACK_NOT_ALLOWED, CALLBACK_REJECTED, CALLBACK_UNAVAILABLE } from '../shared/failure-types';
import {
  callbackBody,
  CALLBACK_PAYLOAD_VERSION_HEADER,
  CURRENT_CALLBACK_PAYLOAD_VERSION,
  type CallbackPayloadVersion,
} from './callback-payload';

import { readBodyText } from '../http-client/body';
import { withDeadline } from '../http-client/deadline';
import { parseRetryAfter } from '../http-client/retry-after';
import { asThirdPartyCall } from '../telemetry/third-party-calls';
import { MAX_RATE_LIMIT_DELAY_MS } from './failures';

/** Below MERCHANT_CALLBACK_ACTIVITY_OPTIONS.startToCloseTimeout (15 s) so the activity reports the real cause. */
export const DEFAULT_CALLBACK_TIMEOUT_MS = 10_000;

/** err.code of a connection refused by the DNS rebinding guard. */
const NON_PUBLIC_ADDRESS = 'ERR_CALLBACK_NON_PUBLIC_ADDRESS';

/**
 * The dispatcher for merchant callbacks: an Agent (one pool per merchant origin) with timeouts under the
 * activity's, and the DNS rebinding guard: a host name that passed the allow-list must still resolve, at connect
 * time, to an address `permitsResolvedAddress` accepts (public; loopback only where the allow-list allows it).
 * The caller owns and closes it.
 */
export function createCallbackDispatcher(
  options: {
    connections?: number;
    timeoutMs?: number;
    allowList?: CallbackAllowList;
    /** In place of dns.lookup (tests resolve made-up names). */
    resolve?: typeof dnsLookup;
  } = {},
): Agent {
  const timeout = options.timeoutMs ?? DEFAULT_CALLBACK_TIMEOUT_MS;
  return new Agent({
    connections: options.connections ?? 8,
    connectTimeout: Math.min(5_000, timeout),
    headersTimeout: timeout,
    bodyTimeout: timeout,
    connect: { lookup: guardedLookup(options.allowList ?? NO_CALLBACKS, options.resolve) },
  });
}

/**
 * One callback dispatcher per allow-list, made on first use: each merchant's callbacks go through the DNS rebinding
 * guard of its own list (loopback only where that list allows it). `for` is ActivityDeps.callbackDispatcher.
 */
export function callbackDispatchers(): {
  for(merchant: { callbacks: { allowList: CallbackAllowList } }): Agent;
  close(): Promise<void>;
} {
  const dispatchers = new Map<CallbackAllowList, Agent>();
  return {
    for({ callbacks: { allowList } }) {
      let dispatcher = dispatchers.get(allowList);
      if (!dispatcher) dispatchers.set(allowList, (dispatcher = createCallbackDispatcher({ allowList })));
      return dispatcher;
    },
    close: async () => {
      await Promise.all([...dispatchers.values()].map((d) => d.close()));
    },
  };
}

/**
 * dns.lookup (or `resolve`, for tests), refusing what the host name must not reach. IP literals never come here
 * (net connects to them without a lookup).
 */
export function guardedLookup(allowList: CallbackAllowList, resolve: typeof dnsLookup = dnsLookup): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname, { ...options, all: true }, (err, addresses: LookupAddress[]) => {
      if (err) return callback(err, '', 0);
      const refused = addresses.find((a) => !permitsResolvedAddress(hostname, a.address, allowList));
      if (refused) {
        const error = Object.assign(new Error(`${hostname} resolves to a non-public address (${refused.address})`), {
          code: NON_PUBLIC_ADDRESS,
        });
        return callback(error, '', 0);
      }
      // net asks for every address (`all: true`) when it tries address families in turn; otherwise for one.
      if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, addresses);
      callback(null, addresses[0]!.address, addresses[0]!.family);
    });
  };
}

export interface MerchantCallback {
  url: string;
  idempotencyKey: string;
  /** The workflow's event (the legacy body); wrapped here as `payloadVersion` says (src/activities/callback-payload.ts). */
  event: Record<string, unknown>;
}

/**
 * POSTs one event as JSON in the merchant's payload version (default the current, Standard Webhooks
 * `{ type, timestamp, data }`), signed (Standard Webhooks headers, src/security/callback-signature.ts). Refused before
 * any request, non-retryably (MerchantCallbackNotAllowed): a URL outside the allow-list, a host name resolving to a
 * non-public address, or no signing secret. 2xx: delivered. 4xx (except 408/429) and redirects: non-retryable
 * MerchantCallbackRejected, the merchant refused it. Everything else: retryable.
 */
export async function postMerchantCallback(
  callback: MerchantCallback,
  options: {
    allowList: CallbackAllowList;
    signer: CallbackSigner;
    dispatcher?: Dispatcher;
    timeoutMs?: number;
    signal?: AbortSignal;
    /** The body's shape (the merchant's callbackPayloadVersion). */
    payloadVersion?: CallbackPayloadVersion;
    /** The payload's `timestamp` for an event without its own `at` (default now). */
    occurredAt?: Date;
  },
): Promise<{ delivered: boolean; status: number }> {
  // Defence in depth: the facade and the workflow checked it too, but runs started before the allow-list existed
  // (or with another worker's configuration) reach this point unchecked.
  const verdict = checkCallbackUrl(callback.url, options.allowList);
  if (!verdict.allowed) throw ApplicationFailure.nonRetryable(verdict.reason, CALLBACK_NOT_ALLOWED);
  if (!options.signer.canSign)
    throw ApplicationFailure.nonRetryable(
      `merchant callbacks are never sent unsigned: no signing secret for this merchant (${CALLBACK_SIGNING_MASTER_SECRETS}, ` +
        `${CALLBACK_SIGNING_SECRETS} or its callbackSigningSecrets)`,
      CALLBACK_NOT_ALLOWED,
    );
  const url = new URL(callback.url);
  // Signed at send time: the timestamp is this attempt's, the signature covers exactly the bytes sent.
  const payloadVersion = options.payloadVersion ?? CURRENT_CALLBACK_PAYLOAD_VERSION;
  const body = callbackBody(callback.event, payloadVersion, options.occurredAt ?? new Date());
  const signature = options.signer.sign(callback.idempotencyKey, body, new Date());

  const { signal, deadline } = withDeadline(options.signal, options.timeoutMs ?? DEFAULT_CALLBACK_TIMEOUT_MS);
  let status: number;
  let retryAfter: string | string[] | undefined;
  try {
    // A merchant is a third party: no trace context of ours in its headers, its URL's path and query out of spans.
    const res = await asThirdPartyCall(() =>
      request(url, {
        method: 'POST',
        // Without an injected dispatcher undici's global one is used (no timeouts of ours but the deadline).
        ...(options.dispatcher ? { dispatcher: options.dispatcher } : {}),
        signal,
        headers: {
          'content-type': 'application/json',
          'idempotency-key': callback.idempotencyKey,
          [CALLBACK_PAYLOAD_VERSION_HEADER]: payloadVersion,
          ...signature,
        },
        body,
      }),
    );
    status = res.statusCode;
    retryAfter = res.headers['retry-after'];
    // Read (and drop) the answer so the socket goes back to the pool; only a little of it is kept.
    await readBodyText(res.body, 4096);
  } catch (err) {
    // Activity cancellation stays a cancellation; any other transport failure may clear up later.
    if (options.signal?.aborted) throw options.signal.reason ?? err;
    if ((err as { code?: unknown } | null)?.code === NON_PUBLIC_ADDRESS)
      throw ApplicationFailure.nonRetryable(
        `merchant callback refused: ${(err as Error).message}`,
        CALLBACK_NOT_ALLOWED,
      );
    throw ApplicationFailure.create({
      type: CALLBACK_UNAVAILABLE,
      message: `merchant callback failed: ${describeCause(err, deadline)}`,
      cause: err instanceof Error ? err : undefined,
    });
  }

  if (status >= 200 && status <= 299) return { delivered: true, status };
  if (status === 408 || status === 429 || status >= 500) {
    throw ApplicationFailure.create({
      type: CALLBACK_UNAVAILABLE,
      message: `merchant callback answered HTTP ${status}`,
      details: [{ status }],
      nextRetryDelay: status === 429 ? capped(parseRetryAfter(retryAfter, Date.now())) : undefined,
    });
  }
  throw ApplicationFailure.create({
    type: CALLBACK_REJECTED,
    message: `merchant callback answered HTTP ${status}`,
    nonRetryable: true,
    details: [{ status }],
  });
}

function describeCause(err: unknown, deadline: AbortSignal): string {
  if (deadline.aborted) return 'no answer in time';
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : err instanceof Error ? err.message : String(err);
}

function capped(ms: number | undefined): number | undefined {
  return ms === undefined ? undefined : Math.min(ms, MAX_RATE_LIMIT_DELAY_MS);
}
