import {
  defaultPayloadConverter,
  fromPayloadsAtIndex,
  SearchAttributeType,
  type LoadedDataConverter,
  type Payload,
  type PayloadCodec,
  type ProtoFailure,
} from '@temporalio/common';
import type { AttributeKey } from '../shared/search-attributes';

/**
 * Decoding what the client reads from raw Temporal responses (a history's first event, a listing, a pending
 * activity), with the SDK's public API only. The SDK's own helpers for this live in its lib/ folders, which the
 * published client must not import (scripts/build-client.mjs, test/client/package-imports.test.ts); these follow
 * @temporalio/common 1.24's internal-non-workflow/codec-helpers and converter/payload-search-attributes.
 */

/** Through each codec, the last first (the order the SDK encodes in reversed). */
async function decoded(codecs: readonly PayloadCodec[], payloads: Payload[]): Promise<Payload[]> {
  let result = payloads;
  for (const codec of [...codecs].reverse()) result = await codec.decode(result);
  return result;
}

/** The value at `index` of encoded payloads (a workflow's input, for example). */
export async function decodePayloadAt<T>(
  converter: LoadedDataConverter,
  index: number,
  payloads: Payload[],
): Promise<T> {
  return fromPayloadsAtIndex<T>(converter.payloadConverter, index, await decoded(converter.payloadCodecs, payloads));
}

type FailureDetails = { payloads?: Payload[] | null } | null | undefined;

/** A failure with every payload it carries decoded (details, heartbeat details, encoded attributes, its causes). */
async function decodedFailure(codecs: readonly PayloadCodec[], failure: ProtoFailure): Promise<ProtoFailure> {
  const details = async (d: FailureDetails) => (d ? { payloads: await decoded(codecs, d.payloads ?? []) } : undefined);
  const { applicationFailureInfo: app, timeoutFailureInfo: timeout, canceledFailureInfo: canceled } = failure;
  const reset = failure.resetWorkflowFailureInfo;
  return {
    ...failure,
    encodedAttributes: failure.encodedAttributes ? (await decoded(codecs, [failure.encodedAttributes]))[0] : undefined,
    cause: failure.cause ? await decodedFailure(codecs, failure.cause) : null,
    applicationFailureInfo: app ? { ...app, details: await details(app.details) } : undefined,
    timeoutFailureInfo: timeout
      ? { ...timeout, lastHeartbeatDetails: await details(timeout.lastHeartbeatDetails) }
      : undefined,
    canceledFailureInfo: canceled ? { ...canceled, details: await details(canceled.details) } : undefined,
    resetWorkflowFailureInfo: reset
      ? { ...reset, lastHeartbeatDetails: await details(reset.lastHeartbeatDetails) }
      : undefined,
  };
}

/** An encoded failure (a pending activity's last one, for example) as the error the SDK would throw for it. */
export async function decodeFailureToError(
  converter: LoadedDataConverter,
  failure: ProtoFailure | null | undefined,
): Promise<Error | undefined> {
  if (!failure) return undefined;
  return converter.failureConverter.failureToError(
    await decodedFailure(converter.payloadCodecs, failure),
    converter.payloadConverter,
  );
}

/**
 * A Keyword or Datetime search attribute of a listing's raw indexed fields (plain JSON, never through codecs);
 * undefined when absent or of another type.
 */
export function searchAttributeValue<
  T extends typeof SearchAttributeType.KEYWORD | typeof SearchAttributeType.DATETIME,
>(
  fields: Record<string, Payload> | null | undefined,
  key: AttributeKey<T>,
): (T extends typeof SearchAttributeType.DATETIME ? Date : string) | undefined {
  const payload = fields?.[key.name];
  if (!payload) return undefined;
  let value = defaultPayloadConverter.fromPayload<unknown>(payload);
  // Values written before typed lists: a one-element array.
  if (Array.isArray(value)) value = value.length === 1 ? (value[0] as unknown) : undefined;
  if (typeof value !== 'string') return undefined;
  if (key.type === SearchAttributeType.KEYWORD) return value as never;
  const date = new Date(value);
  return (Number.isNaN(date.getTime()) ? undefined : date) as never;
}
