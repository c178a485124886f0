import { randomBytes } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import {
  decodeOptionalFailureToOptionalError,
  encodeErrorToFailure,
  encodeToPayloads,
  loadDataConverter,
} from '@temporalio/common/lib/internal-non-workflow';
import { createPayloadCodec, payloadEncryptionKey } from '../../src/security/payload-codec';
import { createDataConverter, FAILURE_CONVERTER_PATH } from '../../src/temporal/data-converter';

/**
 * The data converter every client and worker is built with, loaded as the SDK loads it (the failure converter by
 * path, in a client or a worker's main thread): payloads and failure messages leave encrypted.
 */
describe('createDataConverter', () => {
  const codec = createPayloadCodec([payloadEncryptionKey('k1', randomBytes(32))]);
  const converter = loadDataConverter(createDataConverter(codec));
  const marker = `Customer ${randomBytes(4).toString('hex')}`;
  const utf8 = (bytes?: Uint8Array | null) => Buffer.from(bytes ?? []).toString('latin1');

  it('loads the failure converter from a path the bundler can use too', () => {
    expect(FAILURE_CONVERTER_PATH).toMatch(/shared[\\/]failure-converter\.(ts|js)$/);
    expect(createDataConverter(codec)).toEqual({
      payloadCodecs: [codec],
      failureConverterPath: FAILURE_CONVERTER_PATH,
    });
  });

  it('encrypts payloads', async () => {
    const [payload] = (await encodeToPayloads(converter, { customer: marker }))!;
    expect(utf8(payload!.metadata!.encoding)).toBe('binary/encrypted');
    expect(utf8(payload!.data)).not.toContain(marker);
  });

  it('moves a failure’s message and stack into an encrypted payload, keeping its type readable, and back', async () => {
    const error = ApplicationFailure.nonRetryable(`refused for ${marker}`, 'BankRejected', { customer: marker });
    const failure = await encodeErrorToFailure(converter, error);
    expect(failure.message).toBe('Encoded failure');
    expect(failure.stackTrace).toBe('');
    expect(failure.applicationFailureInfo?.type).toBe('BankRejected');
    expect(utf8(failure.encodedAttributes?.metadata?.encoding)).toBe('binary/encrypted');
    expect(utf8(failure.encodedAttributes?.data)).not.toContain(marker);
    const details = failure.applicationFailureInfo?.details?.payloads ?? [];
    expect(details.length).toBe(1);
    expect(utf8(details[0]!.data)).not.toContain(marker);

    const decoded = await decodeOptionalFailureToOptionalError(converter, failure);
    expect(decoded).toBeInstanceOf(ApplicationFailure);
    expect(decoded?.message).toBe(`refused for ${marker}`);
    expect((decoded as ApplicationFailure).details).toEqual([{ customer: marker }]);
  });
});
