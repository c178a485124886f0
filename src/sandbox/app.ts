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

/** The options checked, with their defaults; throws on an invalid one. */
function sandboxSettings(options: SandboxOptions) {
  if (!options.clientId || !options.clientSecret) throw new Error('clientId and clientSecret are required');
  const initialWebhook = options.accountWebhook ?? {};
  validateAccountWebhookSettings(initialWebhook);
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
  const statuses = options.lifecycle?.statuses;
  if (statuses !== undefined && (statuses.length === 0 || statuses.some((s) => typeof s !== 'string' || s === '')))
    throw new Error('lifecycle.statuses must list at least one non-empty status');
  const bankDelayMs = options.refresh?.bankDelayMs ?? DEFAULT_BANK_DELAY_MS;
  if (!(bankDelayMs[0] >= 0 && bankDelayMs[1] >= bankDelayMs[0]))
    throw new Error('refresh.bankDelayMs must be [min, max] with 0 <= min <= max');
  return {
    initialWebhook,
    clock: options.clock ?? systemClock,
    logger: options.logger ?? pino({ level: 'silent' }),
    retry,
    ttlSeconds: positive('tokenTtlSeconds', options.tokenTtlSeconds, 3600),
    stepMs: positive('lifecycle.stepMs', options.lifecycle?.stepMs, DEFAULT_STEP_MS),
    statuses,
    bankDelayMs,
  };
}

type SandboxSettings = ReturnType<typeof sandboxSettings>;

/** What a control call or a reset changes: the faults of webhooks, the recorded calls, the counters. */
interface SandboxState {
  webhookFaults: WebhookFaults;
  calls: ApiCallRecord[];
  tokenRequests: number;
  stopped: boolean;
}

/** The bank's side: its stores, webhook sender and timers. */
function sandboxParts(settings: SandboxSettings, state: SandboxState) {
  const { clock, logger } = settings;
  const timers = new Timers();
  const faultsNow = (): WebhookFaults => state.webhookFaults;
  const sender = new WebhookSender({ timers, clock, logger, retry: settings.retry });
  const accountWebhooks = new AccountWebhooks({ sender, clock, logger, faults: faultsNow });
  accountWebhooks.configure(settings.initialWebhook);
  const applications = new Applications({
    timers,
    sender,
    clock,
    logger,
    stepMs: settings.stepMs,
    statuses: settings.statuses,
    faults: faultsNow,
    headers: () => accountWebhooks.headers(),
  });
  const consents = new Consents({
    timers,
    webhooks: accountWebhooks,
    clock,
    logger,
    bankDelayMs: settings.bankDelayMs,
  });
  return {
    timers,
    sender,
    tokens: new TokenStore(clock, settings.ttlSeconds),
    accountWebhooks,
    applications,
    consents,
    faults: new FaultQueue(),
    /** Requests left hanging by a fault, destroyed on reset and stop. */
    hung: new Set<Response>(),
  };
}

type SandboxParts = ReturnType<typeof sandboxParts>;

/** A persisted sandbox takes back its memory before it serves anything, then saves each change. */
function persisted(
  persistence: SandboxOptions['persistence'],
  { applications, consents, accountWebhooks }: SandboxParts,
  logger: SandboxSettings['logger'],
): SandboxStateWriter | undefined {
  if (!persistence) return undefined;
  const saved = loadSandboxState(persistence.file);
  if (saved) {
    applications.restore(saved.applications);
    consents.restore(saved.consents);
    const shared = new Map(consents.allTasks().flatMap((t) => t.events.map((d) => [d.deliveryId, d] as const)));
    accountWebhooks.restore(saved.accountWebhooks ?? [], (d) => shared.get(d.deliveryId) ?? d);
    logger.info(
      { file: persistence.file, applications: saved.applications.length, savedAt: saved.savedAt },
      'bank sandbox state restored',
    );
  }
  return new SandboxStateWriter(
    persistence.file,
    () => ({
      applications: applications.snapshot(),
      consents: consents.snapshot(),
      accountWebhooks: accountWebhooks.sent(),
    }),
    persistence.everyMs,
  );
}

const copy = <T>(value: T): T => structuredClone(value);

/** The tests' handle on the sandbox (its routes under /_sandbox are the same calls over HTTP). */
function sandboxControl(
  options: SandboxOptions,
  parts: SandboxParts,
  state: SandboxState,
  lifecycle: { startSpontaneous(): void; releaseHung(): void },
): SandboxControl {
  const { applications, accountWebhooks, consents, faults, tokens, timers } = parts;
  return {
    setApplicationScript: (script, match) => applications.addRule(script, match),
    clearApplicationScripts: () => applications.clearRules(),
    setApplicationStatus: (id, status) => applications.setStatus(id, status),
    sendApplicationWebhooks: async (id, count) => copy(await applications.sendBurst(id, count)),
    setWebhookFaults: (next) => {
      state.webhookFaults = { ...next };
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
      lifecycle.releaseHung();
      applications.clear();
      applications.clearRules();
      consents.clear();
      accountWebhooks.clearLog();
      accountWebhooks.configure(options.accountWebhook ?? {});
      faults.clear();
      state.webhookFaults = { ...options.webhookFaults };
      state.calls = [];
      state.tokenRequests = 0;
      if (!state.stopped) lifecycle.startSpontaneous();
    },
    applications: () => copy(applications.all()),
    application: (id) => {
      const record = applications.get(id);
      return record && copy(record);
    },
    refreshTasks: () => copy(consents.allTasks()),
    accountWebhooksSent: () => copy(accountWebhooks.sent()),
    tokenRequestCount: () => state.tokenRequests,
    apiCalls: () => copy(state.calls),
  };
}

/** The Express app: the control routes, the bank's routes, 404 and the error handler. */
function sandboxExpressApp(
  options: SandboxOptions,
  parts: SandboxParts,
  state: SandboxState,
  control: SandboxControl,
  settings: SandboxSettings,
): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.use('/_sandbox', controlRoutes(control));
  app.use(
    bankRoutes({
      clientId: options.clientId,
      clientSecret: options.clientSecret,
      tokens: parts.tokens,
      applications: parts.applications,
      consents: parts.consents,
      faults: parts.faults,
      get calls() {
        return state.calls;
      },
      clock: settings.clock,
      timers: parts.timers,
      hung: parts.hung,
      countTokenRequest: () => {
        state.tokenRequests += 1;
      },
    }),
  );
  app.use((_req, res) => {
    res.status(404).json({ error: 'not_found', message: 'No such route' });
  });
  app.use(errorHandler(settings.logger));
  return app;
}

/**
 * Builds the bank sandbox as an Express app (no listening socket) and its control. `stop()` clears every timer,
 * cancels pending webhook deliveries and destroys requests left hanging by a fault. Throws on invalid options.
 */
export function createSandboxApp(options: SandboxOptions): { app: Express; control: SandboxControl; stop(): void } {
  const settings = sandboxSettings(options);
  const state: SandboxState = {
    webhookFaults: { ...options.webhookFaults },
    calls: [],
    tokenRequests: 0,
    stopped: false,
  };
  const parts = sandboxParts(settings, state);
  const writer = persisted(options.persistence, parts, settings.logger);

  const startSpontaneous = (): void => {
    const every = options.transactionEvents?.everyMs;
    if (every && every > 0) parts.timers.every(every, () => parts.consents.spontaneousTransactionEvent());
  };
  startSpontaneous();
  const releaseHung = (): void => {
    for (const res of parts.hung) res.socket?.destroy();
    parts.hung.clear();
  };

  const control = sandboxControl(options, parts, state, { startSpontaneous, releaseHung });
  return {
    app: sandboxExpressApp(options, parts, state, control, settings),
    control,
    stop: () => {
      // Saved first, while pending deliveries are still pending (cancelling them below would mark them cancelled).
      writer?.stop();
      state.stopped = true;
      parts.timers.cancelAll();
      releaseHung();
      void parts.sender.close();
    },
  };
}
