import type { DataConverter, PayloadCodec } from '@temporalio/common';

/**
 * The module exporting `failureConverter` (src/shared/failure-converter.ts, or its compiled .js beside this file
 * in dist). The worker bundles it into the workflow code; clients and the worker's main thread require it.
 */
export const FAILURE_CONVERTER_PATH = require.resolve('../shared/failure-converter');

/**
 * The one data converter of every Temporal client (API and receiver, the merchant's typed client) and every
 * Worker: the payload codec (src/security/payload-codec.ts) over the default payload converter, and failure
 * messages and stack traces encoded so the codec encrypts them too. Search attributes are not encoded by codecs:
 * they stay readable (and searchable) on the server.
 *
 * A prebuilt workflow bundle must have been bundled with FAILURE_CONVERTER_PATH too (buildWorkflowBundle does);
 * payload codecs run outside the workflow sandbox, so the bundle never needs the codec or its keys.
 */
export function createDataConverter(codec: PayloadCodec): DataConverter {
  return { payloadCodecs: [codec], failureConverterPath: FAILURE_CONVERTER_PATH };
}
