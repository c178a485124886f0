import type { Logger } from '@temporalio/common';

/**
 * What the bank client logs through: Temporal's Logger shape, so the worker can hand over
 * `Runtime.instance().logger` (pino behind it) and tests a capturing one. Never given a token or a secret.
 */
export type BankLogger = Pick<Logger, 'debug' | 'info' | 'warn' | 'error'>;

const ignore = (): void => undefined;
export const silentLogger: BankLogger = { debug: ignore, info: ignore, warn: ignore, error: ignore };
