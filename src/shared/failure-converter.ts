import { DefaultFailureConverter } from '@temporalio/common';

/**
 * The failure converter of every client and worker (and of the workflow bundle: it runs inside the sandbox too,
 * which is why it lives in src/shared). encodeCommonAttributes moves each failure's message and stack trace into
 * an encoded payload, so the payload codec encrypts them like any other data; the history keeps the failure's type
 * and "Encoded failure" as its message. Loaded by path (DataConverter.failureConverterPath): see
 * src/temporal/data-converter.ts.
 */
export const failureConverter = new DefaultFailureConverter({ encodeCommonAttributes: true });
