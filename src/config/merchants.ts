import { readFileSync } from 'node:fs';
import { z } from 'zod';
import type { MerchantApiKey } from '../security/api-keys';
import {
  CALLBACK_ALLOWED_ORIGINS,
  checkCallbackUrl,
  parseAllowedOrigin,
  type CallbackAllowList,
} from '../security/callback-url';
import { CALLBACK_SIGNING_SECRETS, signingSecretProblem } from '../security/callback-signature';
import { CALLBACK_SIGNING_MASTER_SECRETS } from '../security/merchant-signing-secret';
import { formatDuration, parseDurationMs, SETTING_BOUNDS } from '../shared/application-settings';
import { CALLBACK_PAYLOAD_VERSIONS, type CallbackPayloadVersion } from '../activities/callback-payload';
import { CALLBACK_RETRY_WINDOW_BOUNDS, DEFAULT_CALLBACK_RETRY_WINDOW_MS } from '../shared/undelivered-callbacks';

/**
 * Merchants as tenants (docs/merchant-api.md, "Merchants"): one validated place for what differs per merchant. A merchant is
 * the name of its key in MERCHANT_API_KEYS; MERCHANTS_FILE (JSON, optional) gives any of them its own callback
 * signing secrets, callback allow-list, callback payload version, callback retry window, transactionEvents callback,
 * request budget, bulk resend pace and poll floor. Whatever a merchant's entry leaves out comes from the global variables (CALLBACK_SIGNING_SECRETS,
 * CALLBACK_ALLOWED_ORIGINS, CALLBACK_PAYLOAD_VERSION, TRANSACTIONS_CALLBACK_URL, MERCHANT_REQUESTS_PER_MINUTE,
 * MERCHANT_MAX_LONG_POLLS, MERCHANT_MIN_POLL_INTERVAL and the other MERCHANT_* budgets),
 * so MERCHANT_API_KEYS alone keeps working as the shorthand.
 *
 * Nothing that lets one merchant act against another is shared (docs/decisions/0045-derived-callback-signing-secrets.md):
 * a merchant without callbackSigningSecrets signs with its own secret derived from CALLBACK_SIGNING_MASTER_SECRETS;
 * CALLBACK_SIGNING_SECRETS, CALLBACK_ALLOWED_ORIGINS and TRANSACTIONS_CALLBACK_URL may serve one merchant, never two;
 * the embedded stack's loopback allow-list applies only when there is one merchant; and no secret, origin or
 * transactions URL is listed for two merchants.
 *
 * Problems name the merchant and the field (`merchants.shop-a.callbackAllowedOrigins[0]: ...`), never a secret.
 */

export const MERCHANTS_FILE = 'MERCHANTS_FILE';

/** What one merchant may do and where its callbacks go. */
export interface MerchantSettings {
  id: string;
  callbacks: {
    allowList: CallbackAllowList;
    /**
     * Explicit secrets (MERCHANTS_FILE callbackSigningSecrets, or CALLBACK_SIGNING_SECRETS for a deployment's one
     * merchant): every one signs (Standard Webhooks), so a rotation overlaps; never logged. Empty when derived.
     */
    signingSecrets: readonly string[];
    /**
     * CALLBACK_SIGNING_MASTER_SECRETS, when this merchant's secrets are derived from them and its id
     * (src/security/merchant-signing-secret.ts): the merchant rotates them itself. Absent with explicit secrets.
     */
    signingMasters?: readonly string[];
    /** The callbacks' body: `2026-11-25` (Standard Webhooks `{ type, timestamp, data }`) or `legacy` (deprecated). */
    payloadVersion: CallbackPayloadVersion;
    /** How long a callback is retried from its first scheduling before it is given up (ms). */
    retryWindowMs: number;
  };
  /** Receives this merchant's consents' changed accounts (transactionEvents) and late bank reports. */
  transactionsCallbackUrl?: string;
  limits: MerchantLimits;
}

export interface MerchantLimits {
  /** Facade requests per minute (429 with Retry-After beyond). */
  requestsPerMinute: number;
  /** Long-polls (GET /applications/:ref?waitForChangeFrom=) held at once per API process. */
  maxLongPolls: number;
  /** The shortest poll interval this merchant may ask for in an application's settings (ms). */
  minPollIntervalMs: number;
  /** Applications created (POST /applications) per minute, per API process. */
  creationsPerMinute: number;
  /** Consent refreshes started (POST /consents/:id/refresh) per minute, per API process. */
  refreshesPerMinute: number;
  /** Consents claimed at once, across every API process (counted in Temporal). */
  maxConsents: number;
  /** Applications open (running) at once, across every API process (counted in Temporal). */
  maxOpenApplications: number;
  /** Console live pages (a fragment waiting for a change) held at once per API process. */
  maxLivePages: number;
  /** The pace of a bulk callback resend: callbacks sent again per minute (one bulk resend at a time). */
  callbackResendsPerMinute: number;
}

/** The merchants of a deployment, by id. */
export interface MerchantDirectory {
  get(merchantId: string): MerchantSettings | undefined;
  /**
   * The merchant's settings, or the globals for a merchant this process does not list (a worker configured
   * without MERCHANT_API_KEYS serves every merchant with the global callback settings).
   */
  resolve(merchantId: string): MerchantSettings;
  ids(): string[];
}

export const DEFAULT_MERCHANT_LIMITS: MerchantLimits = {
  requestsPerMinute: 6_000,
  maxLongPolls: 200,
  minPollIntervalMs: SETTING_BOUNDS.fastPollIntervalMs.min,
  creationsPerMinute: 600,
  refreshesPerMinute: 120,
  maxConsents: 100_000,
  maxOpenApplications: 100_000,
  maxLivePages: 50,
  callbackResendsPerMinute: 60,
};

/** The globals a merchant's entry falls back to. */
export interface MerchantDefaults {
  allowList: CallbackAllowList;
  /** True when allowList is a built-in default (CALLBACK_ALLOWED_ORIGINS unset), not the operator's: one merchant only. */
  builtInAllowList?: boolean;
  /** CALLBACK_SIGNING_SECRETS: explicit, for one merchant at most. */
  signingSecrets: readonly string[];
  /** CALLBACK_SIGNING_MASTER_SECRETS (on the embedded stack, a development master): every other merchant's secrets. */
  signingMasters?: readonly string[];
  /** CALLBACK_PAYLOAD_VERSION. */
  payloadVersion: CallbackPayloadVersion;
  /** CALLBACK_RETRY_WINDOW; absent: DEFAULT_CALLBACK_RETRY_WINDOW_MS. */
  retryWindowMs?: number;
  transactionsCallbackUrl?: string;
  limits: MerchantLimits;
}

const duration = (bounds: { min: number; max: number }) =>
  z
    .string()
    .transform((text, ctx) => {
      const ms = parseDurationMs(text);
      if (ms === undefined) {
        ctx.addIssue({ code: 'custom', message: `"${text}" is not a duration like 5s, 1m or 1500ms` });
        return z.NEVER;
      }
      return ms;
    })
    .pipe(
      z
        .number()
        .min(bounds.min, `must be at least ${formatDuration(bounds.min)}`)
        .max(bounds.max, `must be at most ${formatDuration(bounds.max)}`),
    );

const MerchantEntrySchema = z.strictObject({
  callbackSigningSecrets: z
    .array(z.string())
    .min(1, 'must list at least one secret')
    .superRefine((secrets, ctx) => {
      secrets.forEach((secret, i) => {
        const problem = signingSecretProblem(secret);
        if (problem) ctx.addIssue({ code: 'custom', path: [i], message: problem });
      });
    })
    .optional(),
  callbackAllowedOrigins: z
    .array(z.string())
    .transform((entries, ctx) =>
      entries.map((entry, i) => {
        const parsed = parseAllowedOrigin(entry);
        if ('problem' in parsed) ctx.addIssue({ code: 'custom', path: [i], message: parsed.problem });
        return 'origin' in parsed ? parsed.origin : '';
      }),
    )
    .optional(),
  callbackPayloadVersion: z
    .enum(CALLBACK_PAYLOAD_VERSIONS, { error: `must be one of ${CALLBACK_PAYLOAD_VERSIONS.join(', ')}` })
    .optional(),
  transactionsCallbackUrl: z.url({ protocol: /^https?$/, error: 'must be an absolute http(s) URL' }).optional(),
  callbackRetryWindow: duration(CALLBACK_RETRY_WINDOW_BOUNDS).optional(),
  callbackResendsPerMinute: z.number().int().min(1).max(100_000).optional(),
  requestsPerMinute: z.number().int().min(1).max(1_000_000).optional(),
  maxLongPolls: z.number().int().min(1).max(100_000).optional(),
  minPollInterval: duration(SETTING_BOUNDS.fastPollIntervalMs).optional(),
  creationsPerMinute: z.number().int().min(1).max(1_000_000).optional(),
  refreshesPerMinute: z.number().int().min(1).max(1_000_000).optional(),
  maxConsents: z.number().int().min(1).max(1_000_000).optional(),
  maxOpenApplications: z.number().int().min(1).max(1_000_000).optional(),
  maxLivePages: z.number().int().min(1).max(100_000).optional(),
});

const MerchantsFileSchema = z.strictObject({
  merchants: z.record(z.string(), MerchantEntrySchema),
});

export type MerchantsFile = z.input<typeof MerchantsFileSchema>;

export interface MerchantProblem {
  variable: string;
  message: string;
}

/**
 * The directory from the keys, the file's parsed JSON (if any) and the globals, or every problem found.
 * `fileJson` is what MERCHANTS_FILE holds (readMerchantsFile reads it).
 */
export function buildMerchantDirectory(input: {
  keys: readonly MerchantApiKey[];
  /** False when the keys were made for this run (embedded stack) or are not this process's (a worker). */
  keysConfigured?: boolean;
  fileJson?: unknown;
  defaults: MerchantDefaults;
}): { directory?: MerchantDirectory; problems: MerchantProblem[] } {
  const problems: MerchantProblem[] = [];
  const keysConfigured = input.keysConfigured ?? true;
  const names = input.keys.map((k) => k.name);
  let file: z.output<typeof MerchantsFileSchema> = { merchants: {} };
  if (input.fileJson !== undefined) {
    const parsed = MerchantsFileSchema.safeParse(input.fileJson);
    if (!parsed.success) {
      for (const issue of parsed.error.issues) {
        const [top, merchant, ...rest] = issue.path.map(String);
        const where =
          top === 'merchants' && merchant !== undefined
            ? `merchant "${merchant}"${rest.length ? `, ${fieldPath(rest)}` : ''}`
            : fieldPath(issue.path.map(String)) || '(file)';
        problems.push({ variable: MERCHANTS_FILE, message: `${where}: ${issue.message}` });
      }
      return { problems };
    }
    file = parsed.data;
  }
  for (const merchant of Object.keys(file.merchants)) {
    if (!names.includes(merchant) && !keysConfigured) names.push(merchant);
    else if (!names.includes(merchant))
      problems.push({
        variable: MERCHANTS_FILE,
        message: `merchant "${merchant}" has no key in MERCHANT_API_KEYS (a merchant is the name of its key)`,
      });
  }
  // The merchants this deployment has: its keys, or for a process without them (a worker) the file's entries.
  const known = keysConfigured ? input.keys.map((k) => k.name) : Object.keys(file.merchants);

  const fallback = fallbackSettings(input.defaults, known.length > 1);
  const merchants = new Map<string, MerchantSettings>();
  for (const id of names) {
    const entry = file.merchants[id] ?? {};
    const shared = fallback(id);
    const allowList: CallbackAllowList = entry.callbackAllowedOrigins
      ? { origins: entry.callbackAllowedOrigins, loopback: false, source: merchantAllowListSource(id) }
      : shared.callbacks.allowList;
    const transactionsCallbackUrl = entry.transactionsCallbackUrl ?? shared.transactionsCallbackUrl;
    if (entry.transactionsCallbackUrl !== undefined) {
      const verdict = checkCallbackUrl(entry.transactionsCallbackUrl, allowList);
      if (!verdict.allowed)
        problems.push({
          variable: MERCHANTS_FILE,
          message: `merchant "${id}", transactionsCallbackUrl: ${verdict.reason}`,
        });
    }
    merchants.set(id, {
      id,
      callbacks: {
        allowList,
        ...(entry.callbackSigningSecrets
          ? { signingSecrets: entry.callbackSigningSecrets }
          : {
              signingSecrets: shared.callbacks.signingSecrets,
              ...(shared.callbacks.signingMasters ? { signingMasters: shared.callbacks.signingMasters } : {}),
            }),
        payloadVersion: entry.callbackPayloadVersion ?? shared.callbacks.payloadVersion,
        retryWindowMs: entry.callbackRetryWindow ?? shared.callbacks.retryWindowMs,
      },
      transactionsCallbackUrl,
      limits: {
        requestsPerMinute: entry.requestsPerMinute ?? input.defaults.limits.requestsPerMinute,
        maxLongPolls: entry.maxLongPolls ?? input.defaults.limits.maxLongPolls,
        minPollIntervalMs: entry.minPollInterval ?? input.defaults.limits.minPollIntervalMs,
        creationsPerMinute: entry.creationsPerMinute ?? input.defaults.limits.creationsPerMinute,
        refreshesPerMinute: entry.refreshesPerMinute ?? input.defaults.limits.refreshesPerMinute,
        maxConsents: entry.maxConsents ?? input.defaults.limits.maxConsents,
        maxOpenApplications: entry.maxOpenApplications ?? input.defaults.limits.maxOpenApplications,
        maxLivePages: entry.maxLivePages ?? input.defaults.limits.maxLivePages,
        callbackResendsPerMinute: entry.callbackResendsPerMinute ?? input.defaults.limits.callbackResendsPerMinute,
      },
    });
  }
  problems.push(...sharedSettingProblems(known, file.merchants, merchants, input.defaults));
  if (problems.length > 0) return { problems };
  return { directory: merchantDirectory([...merchants.values()], fallback), problems };
}

/**
 * What a merchant without its own entry gets (and a merchant a worker does not list): CALLBACK_ALLOWED_ORIGINS (the
 * built-in loopback default only when the process knows one merchant: loopback on any port would let one merchant's
 * callbacks reach another's local receiver), CALLBACK_SIGNING_SECRETS if set, else secrets derived from the masters,
 * TRANSACTIONS_CALLBACK_URL. Whether two merchants would share one of these is sharedSettingProblems' to refuse.
 */
function fallbackSettings(defaults: MerchantDefaults, several: boolean): (id: string) => MerchantSettings {
  const masters = defaults.signingMasters?.length ? defaults.signingMasters : undefined;
  // One object per merchant: the worker keeps a callback dispatcher per allow-list object (callbackDispatchers).
  const made = new Map<string, MerchantSettings>();
  return (id) => {
    let settings = made.get(id);
    if (!settings)
      made.set(
        id,
        (settings = {
          id,
          callbacks: {
            allowList:
              defaults.builtInAllowList && several
                ? { origins: [], loopback: false, source: merchantAllowListSource(id) }
                : defaults.allowList,
            signingSecrets: defaults.signingSecrets,
            ...(defaults.signingSecrets.length === 0 && masters ? { signingMasters: masters } : {}),
            payloadVersion: defaults.payloadVersion,
            retryWindowMs: defaults.retryWindowMs ?? DEFAULT_CALLBACK_RETRY_WINDOW_MS,
          },
          transactionsCallbackUrl: defaults.transactionsCallbackUrl,
          limits: defaults.limits,
        }),
      );
    return settings;
  };
}

/** Which merchant a value was first seen with, and whether its entry in the file gave it. */
interface Owner {
  id: string;
  fromFile: boolean;
}

/**
 * Settings two merchants would share: a global one (CALLBACK_SIGNING_SECRETS, CALLBACK_ALLOWED_ORIGINS,
 * TRANSACTIONS_CALLBACK_URL) that two merchants fall back to, or a secret, an origin or a transactions URL that
 * MERCHANTS_FILE gives two merchants. Each problem names the setting (and the merchants), never a secret.
 */
function sharedSettingProblems(
  known: readonly string[],
  entries: Record<string, z.output<typeof MerchantEntrySchema>>,
  merchants: ReadonlyMap<string, MerchantSettings>,
  defaults: MerchantDefaults,
): MerchantProblem[] {
  const problems: MerchantProblem[] = [];
  const without = (field: keyof z.output<typeof MerchantEntrySchema>) =>
    known.filter((id) => entries[id]?.[field] === undefined);
  const refuse = (variable: string, users: string[], what: string, field: string) => {
    if (users.length < 2) return;
    problems.push({
      variable,
      message:
        `would be ${what} of ${users.length} merchants (${users.join(', ')}): one merchant could then act as another. ` +
        `With several merchants give each its own ${field} in ${MERCHANTS_FILE}` +
        (variable === CALLBACK_SIGNING_SECRETS
          ? `, or unset it and set ${CALLBACK_SIGNING_MASTER_SECRETS} (each merchant's secret is derived from it and its id)`
          : `, and unset ${variable}`),
    });
  };
  if (defaults.signingSecrets.length > 0)
    refuse(CALLBACK_SIGNING_SECRETS, without('callbackSigningSecrets'), 'the signing secret', 'callbackSigningSecrets');
  const allowsSomething = defaults.allowList.origins.length > 0 || defaults.allowList.loopback;
  if (!defaults.builtInAllowList && allowsSomething)
    refuse(CALLBACK_ALLOWED_ORIGINS, without('callbackAllowedOrigins'), 'the allow-list', 'callbackAllowedOrigins');
  if (defaults.transactionsCallbackUrl !== undefined)
    refuse(
      'TRANSACTIONS_CALLBACK_URL',
      without('transactionsCallbackUrl'),
      'the transactions callback',
      'transactionsCallbackUrl',
    );

  // What the file gives two merchants (or one merchant and the global another falls back to: two falling back to
  // the same global are refused above).
  const owners = { secret: new Map<string, Owner>(), origin: new Map<string, Owner>(), url: new Map<string, Owner>() };
  const firstOwner = (map: Map<string, Owner>, value: string, owner: Owner): Owner | undefined => {
    const other = map.get(value);
    if (other === undefined) map.set(value, owner);
    return other !== undefined && (other.fromFile || owner.fromFile) ? other : undefined;
  };
  for (const id of known) {
    const merchant = merchants.get(id);
    if (!merchant) continue;
    const fromFile = (field: keyof z.output<typeof MerchantEntrySchema>) => entries[id]?.[field] !== undefined;
    // Where the merchant's value came from: its entry in the file, or the global it falls back to.
    const where = (field: keyof z.output<typeof MerchantEntrySchema>, global: string, index?: number) =>
      fromFile(field)
        ? { variable: MERCHANTS_FILE, prefix: `merchant "${id}", ${field}${index === undefined ? '' : `[${index}]`}` }
        : { variable: global, prefix: `(the value of merchant "${id}")` };
    merchant.callbacks.signingSecrets.forEach((secret, i) => {
      const other = firstOwner(owners.secret, secret, { id, fromFile: fromFile('callbackSigningSecrets') });
      if (!other) return;
      const { variable, prefix } = where('callbackSigningSecrets', CALLBACK_SIGNING_SECRETS, i);
      problems.push({
        variable,
        message: `${prefix}: the same secret as merchant "${other.id}"'s; each needs its own`,
      });
    });
    merchant.callbacks.allowList.origins.forEach((origin, i) => {
      const other = firstOwner(owners.origin, origin, { id, fromFile: fromFile('callbackAllowedOrigins') });
      if (!other) return;
      const { variable, prefix } = where('callbackAllowedOrigins', CALLBACK_ALLOWED_ORIGINS, i);
      problems.push({
        variable,
        message: `${prefix}: ${origin} is also in merchant "${other.id}"'s list; an origin receives one merchant's callbacks`,
      });
    });
    const url = merchant.transactionsCallbackUrl;
    const other = url && firstOwner(owners.url, url, { id, fromFile: fromFile('transactionsCallbackUrl') });
    if (other) {
      const { variable, prefix } = where('transactionsCallbackUrl', 'TRANSACTIONS_CALLBACK_URL');
      problems.push({ variable, message: `${prefix}: also merchant "${other.id}"'s; each needs its own` });
    }
  }
  return problems;
}

/** How refusals name a merchant's own allow-list (src/security/callback-url.ts). */
export function merchantAllowListSource(id: string): { variable: string; name: string } {
  return { variable: MERCHANTS_FILE, name: `${MERCHANTS_FILE} callbackAllowedOrigins of merchant "${id}"` };
}

/** A directory over a fixed list; `fallback` serves a merchant it does not list. */
function merchantDirectory(
  merchants: readonly MerchantSettings[],
  fallback: (id: string) => MerchantSettings,
): MerchantDirectory {
  const byId = new Map(merchants.map((m) => [m.id, m]));
  return {
    get: (id) => byId.get(id),
    resolve: (id) => byId.get(id) ?? fallback(id),
    ids: () => [...byId.keys()],
  };
}

/** The merchants still sent the deprecated `legacy` callback body (workers name them at start-up). */
export function merchantsOnLegacyPayload(directory: MerchantDirectory): string[] {
  return directory.ids().filter((id) => directory.resolve(id).callbacks.payloadVersion === 'legacy');
}

/** MERCHANTS_FILE's JSON, or the problem reading it (the path is named; the content never). */
export function readMerchantsFile(path: string): { json?: unknown; problem?: MerchantProblem } {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'error';
    return { problem: { variable: MERCHANTS_FILE, message: `cannot read ${path} (${code})` } };
  }
  try {
    return { json: JSON.parse(text) as unknown };
  } catch {
    // JSON.parse's message quotes the text around the fault: it could be a secret.
    return { problem: { variable: MERCHANTS_FILE, message: `${path} is not valid JSON` } };
  }
}

function fieldPath(parts: string[]): string {
  return parts.map((p, i) => (/^\d+$/.test(p) ? `[${p}]` : i === 0 ? p : `.${p}`)).join('');
}
