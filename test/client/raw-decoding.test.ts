import { ApplicationFailure } from '@temporalio/common';
import { encodeUnifiedSearchAttributes } from '@temporalio/common/lib/converter/payload-search-attributes';
import {
  decodeFromPayloadsAtIndex,
  decodeOptionalFailureToOptionalError,
  encodeErrorToFailure,
  encodeToPayloads,
  loadDataConverter,
} from '@temporalio/common/lib/internal-non-workflow';
import { decodeFailureToError, decodePayloadAt, searchAttributeValue } from '../../src/client/raw-decoding';
import {
  AesGcmPayloadCodec,
  DEVELOPMENT_PAYLOAD_ENCRYPTION_KEYS,
  parsePayloadEncryptionKeys,
} from '../../src/security/payload-codec';
import { createDataConverter } from '../../src/temporal/data-converter';
import { FinanceApplicationCreatedAt, FinanceApplicationStatus, MerchantId } from '../../src/shared/search-attributes';

/**
 * src/client/raw-decoding.ts decodes with public API what the SDK's lib/ helpers decode: each case is checked against
 * those helpers (@temporalio/common 1.24's internals, allowed in tests) through the project's encrypting converter.
 */
const converter = loadDataConverter(
  createDataConverter(new AesGcmPayloadCodec(parsePayloadEncryptionKeys(DEVELOPMENT_PAYLOAD_ENCRYPTION_KEYS))),
);

describe('raw decoding with public API', () => {
  it('decodes an encrypted workflow input as the SDK does', async () => {
    const input = { merchantReference: 'order-1', application: { redirectUrl: 'https://shop.example' } };
    const payloads = (await encodeToPayloads(converter, input, 'second'))!;
    expect(payloads[0]!.metadata?.encoding?.toString()).toBe('binary/encrypted');
    expect(await decodePayloadAt(converter, 0, payloads)).toEqual(input);
    expect(await decodePayloadAt(converter, 1, payloads)).toEqual(
      await decodeFromPayloadsAtIndex(converter, 1, payloads),
    );
  });

  it('decodes an encrypted failure, its details and its cause, to the error the SDK gives', async () => {
    const cause = ApplicationFailure.create({ type: 'Inner', message: 'inner', details: [{ n: 1 }] });
    const error = ApplicationFailure.create({
      type: 'CallbackRejected',
      message: 'merchant answered 503',
      details: [{ status: 503 }],
      cause,
    });
    const failure = await encodeErrorToFailure(converter, error);
    const ours = await decodeFailureToError(converter, failure);
    const sdk = await decodeOptionalFailureToOptionalError(converter, failure);
    expect(ours).toBeInstanceOf(ApplicationFailure);
    const app = ours as ApplicationFailure;
    expect([app.message, app.type, app.details]).toEqual([
      'merchant answered 503',
      'CallbackRejected',
      [{ status: 503 }],
    ]);
    expect((app.cause as ApplicationFailure).details).toEqual([{ n: 1 }]);
    expect([app.message, app.details, (app.cause as ApplicationFailure).message]).toEqual([
      sdk!.message,
      (sdk as ApplicationFailure).details,
      ((sdk as ApplicationFailure).cause as ApplicationFailure).message,
    ]);
    expect(await decodeFailureToError(converter, undefined)).toBeUndefined();
  });

  it('reads Keyword and Datetime search attributes of a listing, and nothing of another type', () => {
    const at = new Date('2026-11-28T08:00:00.000Z');
    const fields = encodeUnifiedSearchAttributes(undefined, [
      { key: MerchantId, value: 'shop-a' },
      { key: FinanceApplicationCreatedAt, value: at },
    ]);
    expect(searchAttributeValue(fields, MerchantId)).toBe('shop-a');
    expect(searchAttributeValue(fields, FinanceApplicationCreatedAt)).toEqual(at);
    expect(searchAttributeValue(fields, FinanceApplicationStatus)).toBeUndefined();
    expect(searchAttributeValue(undefined, MerchantId)).toBeUndefined();
    // Written before typed lists: a one-element array.
    const legacy = encodeUnifiedSearchAttributes({ MerchantId: ['shop-b'] });
    expect(searchAttributeValue(legacy, MerchantId)).toBe('shop-b');
  });
});
