import { Client, Connection, type ConnectionOptions } from '@temporalio/client';
import type { DataConverter } from '@temporalio/common';
import {
  createPayloadCodec,
  DEVELOPMENT_PAYLOAD_ENCRYPTION_KEYS,
  DEVELOPMENT_PAYLOAD_KEY_ID,
  parsePayloadEncryptionKeys,
  PayloadKeyFormatError,
  type PayloadEncryptionKey,
} from '../security/payload-codec';
import { createDataConverter } from '../temporal/data-converter';
import { claimConsent, releaseConsent } from './consent-claims';
import { awaitConsentRefreshResult, getConsentRefreshProgress, startConsentRefresh } from './consent-refresh';
import { awaitFinanceApplication, getFinanceApplication } from './finance-application-reads';
import {
  listFinanceApplications,
  startFinanceApplication,
  type StartFinanceApplicationRequest,
} from './finance-applications';
import { merchantScope, type MerchantScope } from './merchant-scope';
import { waitForFinanceApplicationChange, type WaitForChangeOptions } from './status-waits';

/**
 * How a merchant's service reaches the paylater workers (docs/decisions/0036-client-identity-and-payload-codec.md):
 * over its own Temporal connection, with the workers' payload codec, so nothing it sends is stored in plaintext and
 * it reads its own (encrypted) results. The settings are read from the variables the service itself uses.
 */

/** The workers' defaults (src/config/schema.ts): the embedded dev server's port and TASK_QUEUE. */
export const CLIENT_DEFAULTS = { address: 'localhost:7233', namespace: 'default', taskQueue: 'paylater' } as const;

/** A setting the client cannot use; names the variable (or option), never a key. */
export class PaylaterClientConfigError extends Error {
  override name = 'PaylaterClientConfigError';
}

export interface PaylaterClientSettings {
  /** TEMPORAL_ADDRESS (host:port). */
  address: string;
  /** TEMPORAL_NAMESPACE. */
  namespace: string;
  /** TASK_QUEUE: the workers' task queue. */
  taskQueue: string;
  /** TEMPORAL_API_KEY (Temporal Cloud and other API-key servers; TLS on). Never logged. */
  apiKey?: string;
  /** PAYLOAD_ENCRYPTION_KEYS: the first encrypts, every one decrypts. */
  payloadKeys: PayloadEncryptionKey[];
  /** True when PAYLOAD_ENCRYPTION_KEYS is unset and the public development key of the embedded stack is used. */
  developmentKey: boolean;
}

const HOST_PORT = /^[A-Za-z0-9.[\]:-]+:\d{1,5}$/;
const LOOPBACK_HOST = /^(localhost|127(?:\.\d{1,3}){3}|\[::1\])$/;

/** True for an address on this machine: the only place the embedded stack (and its public key) can be. */
export function isLoopbackAddress(address: string): boolean {
  return LOOPBACK_HOST.test(address.slice(0, address.lastIndexOf(':')));
}

const set = (value: string | undefined): string | undefined =>
  value === undefined || value.trim() === '' ? undefined : value.trim();

/**
 * The settings from the service's variable names (an empty variable counts as unset). Without
 * PAYLOAD_ENCRYPTION_KEYS, the embedded stack's public development key is used, and only towards a loopback
 * address: a service pointed at a real Temporal without keys stops here instead of writing what anyone can read.
 */
export function paylaterClientSettings(
  env: Record<string, string | undefined> = process.env,
  overrides: Partial<Pick<PaylaterClientSettings, 'address' | 'namespace' | 'taskQueue'>> & {
    payloadEncryptionKeys?: string;
  } = {},
): PaylaterClientSettings {
  const address = overrides.address ?? set(env.TEMPORAL_ADDRESS) ?? CLIENT_DEFAULTS.address;
  if (!HOST_PORT.test(address)) {
    throw new PaylaterClientConfigError(`TEMPORAL_ADDRESS must be host:port, for example localhost:7233`);
  }
  const keysText = overrides.payloadEncryptionKeys ?? set(env.PAYLOAD_ENCRYPTION_KEYS);
  let payloadKeys: PayloadEncryptionKey[];
  if (keysText !== undefined) {
    try {
      payloadKeys = parsePayloadEncryptionKeys(keysText);
    } catch (err) {
      if (err instanceof PayloadKeyFormatError) {
        throw new PaylaterClientConfigError(`PAYLOAD_ENCRYPTION_KEYS: ${err.message}`);
      }
      throw err;
    }
  } else if (isLoopbackAddress(address)) {
    payloadKeys = parsePayloadEncryptionKeys(DEVELOPMENT_PAYLOAD_ENCRYPTION_KEYS);
  } else {
    throw new PaylaterClientConfigError(
      `PAYLOAD_ENCRYPTION_KEYS is required for Temporal at ${address}: set the workers' keys ` +
        `(keyId:<base64 of 32 bytes>,…). Only a loopback address (the embedded stack of npm start) ` +
        `falls back to the public development key.`,
    );
  }
  return {
    address,
    namespace: overrides.namespace ?? set(env.TEMPORAL_NAMESPACE) ?? CLIENT_DEFAULTS.namespace,
    taskQueue: overrides.taskQueue ?? set(env.TASK_QUEUE) ?? CLIENT_DEFAULTS.taskQueue,
    apiKey: set(env.TEMPORAL_API_KEY),
    payloadKeys,
    developmentKey: keysText === undefined,
  };
}

/**
 * The workers' data converter over these keys (a key list as PAYLOAD_ENCRYPTION_KEYS spells it, or parsed keys):
 * for a merchant that builds its own `Client` (`new Client({ connection, dataConverter })`).
 */
export function paylaterDataConverter(keys: string | readonly PayloadEncryptionKey[]): DataConverter {
  return createDataConverter(createPayloadCodec(typeof keys === 'string' ? parsePayloadEncryptionKeys(keys) : keys));
}

export interface ConnectPaylaterOptions {
  /**
   * The merchant these calls act for: the name of its key in MERCHANT_API_KEYS (`dev` on the embedded stack).
   * Trusted, as everything holding the namespace's credentials is (docs/merchant-api.md, "Trust model").
   */
  merchantId: string;
  /** Where the variables are read; process.env when absent. */
  env?: Record<string, string | undefined>;
  /** Instead of TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TASK_QUEUE, PAYLOAD_ENCRYPTION_KEYS. */
  address?: string;
  namespace?: string;
  taskQueue?: string;
  payloadEncryptionKeys?: string;
  /** More connection options (mTLS `tls`, `metadata`, …) over the address and TEMPORAL_API_KEY. */
  connectionOptions?: Omit<ConnectionOptions, 'address'>;
}

/** The typed client bound to one merchant, its connection, task queue and payload codec. */
export interface PaylaterClient {
  readonly client: Client;
  readonly connection: Connection;
  readonly merchant: MerchantScope;
  readonly settings: Omit<PaylaterClientSettings, 'apiKey' | 'payloadKeys'> & { payloadKeyIds: string[] };
  startFinanceApplication(request: StartFinanceApplicationRequest): ReturnType<typeof startFinanceApplication>;
  getFinanceApplication(merchantReference: string): ReturnType<typeof getFinanceApplication>;
  awaitFinanceApplication(merchantReference: string): ReturnType<typeof awaitFinanceApplication>;
  waitForFinanceApplicationChange(
    merchantReference: string,
    options: WaitForChangeOptions,
  ): ReturnType<typeof waitForFinanceApplicationChange>;
  listFinanceApplications(
    ...args: DropTwo<Parameters<typeof listFinanceApplications>>
  ): ReturnType<typeof listFinanceApplications>;
  startConsentRefresh(
    input: Parameters<typeof startConsentRefresh>[2],
    options?: { lateReportsCallbackUrl?: string },
  ): ReturnType<typeof startConsentRefresh>;
  getConsentRefreshProgress(consentId: string): ReturnType<typeof getConsentRefreshProgress>;
  awaitConsentRefreshResult(consentId: string): ReturnType<typeof awaitConsentRefreshResult>;
  claimConsent(consentId: string): ReturnType<typeof claimConsent>;
  releaseConsent(consentId: string): ReturnType<typeof releaseConsent>;
  /** Closes the connection (when connectPaylater opened it). */
  close(): Promise<void>;
}

type DropTwo<T extends unknown[]> = T extends [unknown, unknown, ...infer Rest] ? Rest : never;

/**
 * Connects to Temporal with the service's settings and the workers' payload codec, and binds the typed functions
 * to one merchant. Against `npm start` nothing needs setting: localhost:7233, task queue `paylater`, the public
 * development key (a process warning says so).
 */
export async function connectPaylater(options: ConnectPaylaterOptions): Promise<PaylaterClient> {
  const merchant = merchantScope(options.merchantId);
  const env = options.env ?? process.env;
  const settings = paylaterClientSettings(env, options);
  if (settings.developmentKey) {
    process.emitWarning(
      `PAYLOAD_ENCRYPTION_KEYS is unset: payloads are encrypted with the public development key ` +
        `"${DEVELOPMENT_PAYLOAD_KEY_ID}" of the embedded stack. Set the workers' keys before handling real customer data.`,
      { code: 'PAYLATER_DEVELOPMENT_KEY' },
    );
  }
  const connection = await Connection.connect({
    ...options.connectionOptions,
    address: settings.address,
    ...(settings.apiKey !== undefined && { apiKey: settings.apiKey, tls: options.connectionOptions?.tls ?? true }),
  });
  const client = new Client({
    connection,
    namespace: settings.namespace,
    dataConverter: paylaterDataConverter(settings.payloadKeys),
  });
  const queue = { taskQueue: settings.taskQueue };
  return {
    client,
    connection,
    merchant,
    // What is safe to show: no key material, no API key.
    settings: {
      address: settings.address,
      namespace: settings.namespace,
      taskQueue: settings.taskQueue,
      developmentKey: settings.developmentKey,
      payloadKeyIds: settings.payloadKeys.map((k) => k.id),
    },
    startFinanceApplication: (request) => startFinanceApplication(client, merchant, request, queue),
    getFinanceApplication: (ref) => getFinanceApplication(client, merchant, ref),
    awaitFinanceApplication: (ref) => awaitFinanceApplication(client, merchant, ref),
    waitForFinanceApplicationChange: (ref, wait) => waitForFinanceApplicationChange(client, merchant, ref, wait),
    listFinanceApplications: (...args) => listFinanceApplications(client, merchant, ...args),
    startConsentRefresh: (input, more) => startConsentRefresh(client, merchant, input, { ...queue, ...more }),
    getConsentRefreshProgress: (consentId) => getConsentRefreshProgress(client, merchant, consentId),
    awaitConsentRefreshResult: (consentId) => awaitConsentRefreshResult(client, merchant, consentId),
    claimConsent: (consentId) => claimConsent(client, merchant, consentId, queue),
    releaseConsent: (consentId) => releaseConsent(client, merchant, consentId),
    close: () => connection.close(),
  };
}
