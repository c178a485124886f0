import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { collectProcessMetrics } from '../telemetry/process-metrics';

/**
 * Prometheus metrics of the HTTP apps (both listeners share one registry, served on the internal one); no global
 * registry. Names and labels follow src/shared/metric-names.ts (docs/metrics.md lists them).
 */
export function createMetrics() {
  const registry = new Registry();
  collectProcessMetrics(registry);
  return {
    registry,
    /**
     * Labels: `listener` (public | internal), `method` (methodLabel: a fixed set or `other`), `route` (the matched
     * route's pattern, `other` when none matched), `status`.
     */
    httpRequests: new Histogram({
      name: 'paylater_http_request_duration_seconds',
      help: 'HTTP request duration by listener, method, route and status',
      labelNames: ['listener', 'method', 'route', 'status'] as const,
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers: [registry],
    }),
    /** Every webhook the bank sent, by kind and outcome (accepted, rejected reason, no-target, unavailable). */
    webhooks: new Counter({
      name: 'paylater_bank_webhooks_total',
      help: 'Bank webhooks received, by kind and outcome',
      labelNames: ['kind', 'outcome'] as const,
      registers: [registry],
    }),
    /** Merchant facade authentication, by the key's NAME (never the key) and outcome (accepted, missing, wrong). */
    merchantAuth: new Counter({
      name: 'paylater_merchant_api_requests_total',
      help: 'Requests to API-key routes, by merchant key name and authentication outcome',
      labelNames: ['merchant', 'outcome'] as const,
      registers: [registry],
    }),
    /**
     * Operator routes' authentication (/codec), by the operator key's NAME and outcome (accepted, missing, wrong,
     * merchant_key: a merchant's key, refused with 403).
     */
    operatorAuth: new Counter({
      name: 'paylater_operator_api_requests_total',
      help: 'Requests to operator routes (/codec), by operator key name and authentication outcome',
      labelNames: ['operator', 'outcome'] as const,
      registers: [registry],
    }),
    /**
     * 429s of the merchant budgets (src/api/budgets.ts), by merchant and budget (requests, creations, refreshes,
     * long_polls, live_pages, consents, open_applications), on the API and the console alike.
     */
    budgetRefusals: new Counter({
      name: 'paylater_merchant_budget_refusals_total',
      help: 'Merchant requests (API and console) refused with 429, by merchant and budget',
      labelNames: ['merchant', 'budget'] as const,
      registers: [registry],
    }),
    /**
     * Merchant console sign-ins refused with 429 before the key is checked: too many failed ones from one client
     * address (FAILED_AUTHENTICATIONS_PER_15_MINUTES, src/api/auth-failures.ts): the console's share of
     * paylater_authentication_refusals_total, kept for the dashboards that read it. No label: an address is unbounded.
     */
    consoleSignInRefusals: new Counter({
      name: 'paylater_console_sign_in_refusals_total',
      help: 'Merchant console sign-ins refused with 429: too many failed sign-ins from the client address',
      registers: [registry],
    }),
    /**
     * Claims (PUT /consents/{consentId}) and refreshes refused because another merchant owns the consent, by the
     * refused merchant, the owner and the route (`claim`, `refresh`): operators see who asks for whose consents
     * (docs/decisions/0046-consents-assigned-by-an-operator.md). Both merchants are key names.
     */
    consentClaimConflicts: new Counter({
      name: 'paylater_consent_claim_conflicts_total',
      help: 'Consent claims and refreshes refused because another merchant owns the consent, by merchant, owner and route',
      labelNames: ['merchant', 'owner', 'via'] as const,
      registers: [registry],
    }),
    /**
     * 429s of the failed-authentication limit (src/api/auth-failures.ts): a client address with too many wrong keys,
     * by where it knocked (`surface`: merchant_api, operator_api, console). No address label: an address is unbounded.
     */
    authRefusals: new Counter({
      name: 'paylater_authentication_refusals_total',
      help: 'Requests refused with 429 before their key was checked: too many wrong keys from the client address',
      labelNames: ['surface'] as const,
      registers: [registry],
    }),
    /** Console live pages (a fragment waiting for a change) held open now by this API process, by merchant. */
    livePagesOpen: new Gauge({
      name: 'paylater_merchant_console_live_pages_open',
      help: 'Console live pages waiting for a change, held open by this API process, by merchant',
      labelNames: ['merchant'] as const,
      registers: [registry],
    }),
    /** Long-polls held open now by this API process, by merchant (at most its maxLongPolls). */
    longPollsOpen: new Gauge({
      name: 'paylater_merchant_long_polls_open',
      help: 'Long-polls (GET /applications/{ref}?waitForChangeFrom=) held open by this API process, by merchant',
      labelNames: ['merchant'] as const,
      registers: [registry],
    }),
  };
}
export type Metrics = ReturnType<typeof createMetrics>;
