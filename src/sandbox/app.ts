import express, { type Express, type Response } from 'express';
import pino from 'pino';
import { AccountWebhooks, validateAccountWebhookSettings } from './account-webhooks';
import { FaultQueue } from './api-faults';
import { Applications } from './applications';
import { systemClock } from './clock';
import { Consents } from './consents';
import { bankRoutes, errorHandler } from './routes/bank';
import { controlRoutes } from './routes/control';
import { loadSandboxState, SandboxStateWriter } from './persistence';
import { Timers } from './timers';
import { TokenStore } from './tokens';
import { DEFAULT_RETRY, WebhookSender, type RetryPolicy } from './webhook-sender';
import type { ApiCallRecord, SandboxControl, SandboxOptions, WebhookFaults } from './types';

const DEFAULT_STEP_MS = 10_000;
const DEFAULT_BANK_DELAY_MS: [number, number] = [1_000, 4_000];

function positive(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isFinite(value) || value < 0) throw new Error(`${name} must be a non-negative number`);
  return value;
}

/**
 * Builds the bank sandbox as an Express app (no listening socket) and its control. `stop()` clears every timer,
 * cancels pending webhook deliveries and destroys requests left hanging by a fault. Throws on invalid options.
 */
export function createSandboxApp(options: SandboxOptions): { app: Express; control: SandboxControl; stop(): void } {
  if (!options.clientId || !options.clientSecret) throw new Error('clientId and clientSecret are required');
  const initialWebhook = options.accountWebhook ?? {};
  validateAccountWebhookSettings(initialWebhook);
  const clock = options.clock ?? systemClock;
  const logger = options.logger ?? pino({ level: 'silent' });
  const retry: RetryPolicy = {
    attempts: Math.max(
      1,
      Math.floor(positive('webhookRetry.attempts', options.webhookRetry?.attempts, DEFAULT_RETRY.attempts)),
    ),
    initialDelayMs: positive(
      'webhookRetry.initialDelayMs',
      options.webhookRetry?.initialDelayMs,
      DEFAULT_RETRY.initialDelayMs,
    ),
    maxDelayMs: positive('webhookRetry.maxDelayMs', options.webhookRetry?.maxDelayMs, DEFAULT_RETRY.maxDelayMs),
    timeoutMs: positive('webhookRetry.timeoutMs', options.webhookRetry?.timeoutMs, DEFAULT_RETRY.timeoutMs),
  };
  const ttl = positive('tokenTtlSeconds', options.tokenTtlSeconds, 3600);
  const stepMs = positive('lifecycle.stepMs', options.lifecycle?.stepMs, DEFAULT_STEP_MS);
  const statuses = options.lifecycle?.statuses;
  if (statuses !== undefined && (statuses.length === 0 || statuses.some((s) => typeof s !== 'string' || s === '')))
    throw new Error('lifecycle.statuses must list at least one non-empty status');
  const bankDelayMs = options.refresh?.bankDelayMs ?? DEFAULT_BANK_DELAY_MS;
  if (!(bankDelayMs[0] >= 0 && bankDelayMs[1] >= bankDelayMs[0]))
    throw new Error('refresh.bankDelayMs must be [min, max] with 0 <= min <= max');

  const timers = new Timers();
  let webhookFaults: WebhookFaults = { ...options.webhookFaults };
  const faultsNow = (): WebhookFaults => webhookFaults;
  const sender = new WebhookSender({ timers, clock, logger, retry });
  const tokens = new TokenStore(clock, ttl);
  const accountWebhooks = new AccountWebhooks({ sender, clock, logger, faults: faultsNow });
  accountWebhooks.configure(initialWebhook);
  const applications = new Applications({
    timers,
    sender,
    clock,
    logger,
    stepMs,
    statuses,
    faults: faultsNow,
    headers: () => accountWebhooks.headers(),
  });
  const consents = new Consents({ timers, webhooks: accountWebhooks, clock, logger, bankDelayMs });
  const faults = new FaultQueue();
  let calls: ApiCallRecord[] = [];
  let tokenRequests = 0;
  const hung = new Set<Response>();
  let stopped = false;

  // A persisted sandbox takes back its memory before it serves anything, then saves each change.
  let writer: SandboxStateWriter | undefined;
  if (options.persistence) {
    const saved = loadSandboxState(options.persistence.file);
    if (saved) {
      applications.restore(saved.applications);
      consents.restore(saved.consents);
      const shared = new Map(consents.allTasks().flatMap((t) => t.events.map((d) => [d.deliveryId, d] as const)));
      accountWebhooks.restore(saved.accountWebhooks ?? [], (d) => shared.get(d.deliveryId) ?? d);
      logger.info(
        { file: options.persistence.file, applications: saved.applications.length, savedAt: saved.savedAt },
        'bank sandbox state restored',
      );
    }
    writer = new SandboxStateWriter(
      options.persistence.file,
      () => ({
        applications: applications.snapshot(),
        consents: consents.snapshot(),
        accountWebhooks: accountWebhooks.sent(),
      }),
      options.persistence.everyMs,
    );
  }

  const startSpontaneous = (): void => {
    const every = options.transactionEvents?.everyMs;
    if (every && every > 0) timers.every(every, () => consents.spontaneousTransactionEvent());
  };
  startSpontaneous();

  const releaseHung = (): void => {
    for (const res of hung) res.socket?.destroy();
    hung.clear();
  };

  const copy = <T>(value: T): T => structuredClone(value);
  const control: SandboxControl = {
    setApplicationScript: (script, match) => applications.addRule(script, match),
    clearApplicationScripts: () => applications.clearRules(),
    setApplicationStatus: (id, status) => applications.setStatus(id, status),
    sendApplicationWebhooks: async (id, count) => copy(await applications.sendBurst(id, count)),
    setWebhookFaults: (next) => {
      webhookFaults = { ...next };
    },
    setAccountWebhook: (settings) => accountWebhooks.configure(settings),
    accountWebhookActiveFrom: () => accountWebhooks.activeFrom(),
    setConsent: (consentId, setup) => consents.set(consentId, setup),
    consent: (consentId) => consents.resolve(consentId),
    sendAccountEvent: async (body) => {
      const result = accountWebhooks.emit('accountEvent', copy(body), 'manual');
      await result.settled;
      return copy(result.deliveries[0]!);
    },
    emitTransactionEvents: (consentId, request) => consents.emitTransactionEvents(consentId, request),
    injectApiFault: (fault) => faults.add(fault),
    clearApiFaults: () => faults.clear(),
    revokeAllTokens: () => tokens.revokeAll(),
    reset: () => {
      timers.cancelAll();
      releaseHung();
      applications.clear();
      applications.clearRules();
      consents.clear();
      accountWebhooks.clearLog();
      accountWebhooks.configure(initialWebhook);
      faults.clear();
      webhookFaults = { ...options.webhookFaults };
      calls = [];
      tokenRequests = 0;
      if (!stopped) startSpontaneous();
    },
    applications: () => copy(applications.all()),
    application: (id) => {
      const record = applications.get(id);
      return record && copy(record);
    },
    refreshTasks: () => copy(consents.allTasks()),
    accountWebhooksSent: () => copy(accountWebhooks.sent()),
    tokenRequestCount: () => tokenRequests,
    apiCalls: () => copy(calls),
  };

  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.use('/_sandbox', controlRoutes(control));
  app.use(
    bankRoutes({
      clientId: options.clientId,
      clientSecret: options.clientSecret,
      tokens,
      applications,
      consents,
      faults,
      get calls() {
        return calls;
      },
      clock,
      timers,
      hung,
      countTokenRequest: () => {
        tokenRequests += 1;
      },
    }),
  );
  app.use((_req, res) => {
    res.status(404).json({ error: 'not_found', message: 'No such route' });
  });
  app.use(errorHandler(logger));

  return {
    app,
    control,
    stop: () => {
      // Saved first, while pending deliveries are still pending (cancelling them below would mark them cancelled).
      writer?.stop();
      stopped = true;
      timers.cancelAll();
      releaseHung();
      void sender.close();
    },
  };
}
