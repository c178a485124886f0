import express, { type Router } from 'express';
import { z } from 'zod';
import {
  AccountWebhookSettingsSchema,
  ApiFaultSchema,
  ApplicationScriptSchema,
  ConsentSetupSchema,
  WebhookFaultsSchema,
} from '../control-schemas';
import type { SandboxControl } from '../types';

/**
 * The control over HTTP, for other processes (benchmarks, a sandbox run with `npm run sandbox`). No auth: the
 * sandbox is a test double. JSON in, JSON out; invalid bodies get 400 with the zod issues. GET /_sandbox lists
 * the routes and the JSON Schema of their bodies.
 *
 * | route | control method |
 * |---|---|
 * | POST /_sandbox/application-scripts `{ script, match? }` → 201 `{ ruleId }` | setApplicationScript (match: field equality) |
 * | DELETE /_sandbox/application-scripts → 204 | clearApplicationScripts |
 * | GET /_sandbox/applications, GET /_sandbox/applications/:id | applications(), application(id) (404 unknown) |
 * | POST /_sandbox/applications/:id/status `{ status }` → 204 | setApplicationStatus |
 * | POST /_sandbox/applications/:id/webhooks `{ count }` → 202 | sendApplicationWebhooks (not awaited) |
 * | PUT /_sandbox/webhook-faults `{ drop?, duplicate?, delayMs? }` → 204 | setWebhookFaults |
 * | PUT /_sandbox/account-webhook `{ endpoint?, securityHeader?, activation? }` → 200 `{ activeFrom }` | setAccountWebhook |
 * | PUT /_sandbox/consents/:consentId `ConsentSetup` → 204, GET → ResolvedConsent | setConsent, consent |
 * | POST /_sandbox/account-events `body` → 202 | sendAccountEvent (not awaited) |
 * | POST /_sandbox/consents/:consentId/transaction-events `{ count?, accountIds?, withinMs? }` → 202 | emitTransactionEvents |
 * | POST /_sandbox/api-faults `ApiFault` → 204, DELETE /_sandbox/api-faults → 204 | injectApiFault, clearApiFaults |
 * | POST /_sandbox/revoke-tokens → 204 | revokeAllTokens |
 * | POST /_sandbox/reset → 204 | reset |
 * | GET /_sandbox/refresh-tasks, /_sandbox/account-webhooks, /_sandbox/api-calls | refreshTasks(), accountWebhooksSent(), apiCalls() |
 * | GET /_sandbox/token-requests → `{ count }` | tokenRequestCount() |
 */
/** The routes below, as GET /_sandbox lists them: `body` names an entry of CONTROL_BODIES. */
const CONTROL_ROUTES = [
  { route: 'POST /_sandbox/application-scripts', body: 'ApplicationScriptRule', answer: '201 { ruleId }' },
  { route: 'DELETE /_sandbox/application-scripts', answer: '204' },
  { route: 'GET /_sandbox/applications', answer: '200 every application the bank holds' },
  { route: 'GET /_sandbox/applications/:id', answer: '200 one application, 404 unknown' },
  { route: 'POST /_sandbox/applications/:id/status', body: '{ status }', answer: '204' },
  { route: 'POST /_sandbox/applications/:id/webhooks', body: '{ count }', answer: '202' },
  { route: 'PUT /_sandbox/webhook-faults', body: 'WebhookFaults', answer: '204' },
  { route: 'PUT /_sandbox/account-webhook', body: 'AccountWebhookSettings', answer: '200 { activeFrom }' },
  { route: 'PUT /_sandbox/consents/:consentId', body: 'ConsentSetup', answer: '204' },
  { route: 'GET /_sandbox/consents/:consentId', answer: '200 the consent as resolved' },
  { route: 'POST /_sandbox/account-events', body: 'an accountEvent or transactionEvent body', answer: '202' },
  { route: 'POST /_sandbox/consents/:consentId/transaction-events', body: 'TransactionEventsRequest', answer: '202' },
  { route: 'POST /_sandbox/api-faults', body: 'ApiFault', answer: '204' },
  { route: 'DELETE /_sandbox/api-faults', answer: '204' },
  { route: 'POST /_sandbox/revoke-tokens', answer: '204' },
  { route: 'POST /_sandbox/reset', answer: '204' },
  { route: 'GET /_sandbox/refresh-tasks', answer: '200 the refresh tasks' },
  { route: 'GET /_sandbox/account-webhooks', answer: '200 the account webhooks sent, with their attempts' },
  { route: 'GET /_sandbox/api-calls', answer: '200 every bank API call, with its answer' },
  { route: 'GET /_sandbox/token-requests', answer: '200 { count }' },
];

const TransactionEventsRequestSchema = z.strictObject({
  count: z.number().int().min(1).max(10_000).optional(),
  accountIds: z.array(z.string().min(1)).optional(),
  withinMs: z.number().min(0).optional(),
});

const CONTROL_BODIES: Record<string, z.ZodType> = {
  ApplicationScriptRule: z.object({
    script: ApplicationScriptSchema,
    match: z.record(z.string(), z.unknown()).optional(),
  }),
  WebhookFaults: WebhookFaultsSchema,
  AccountWebhookSettings: AccountWebhookSettingsSchema,
  ConsentSetup: ConsentSetupSchema,
  TransactionEventsRequest: TransactionEventsRequestSchema,
  ApiFault: ApiFaultSchema,
};

export function controlRoutes(control: SandboxControl): Router {
  const router = express.Router();
  router.use(express.json({ limit: '1mb' }));

  // The index: every control route, what it takes and answers, and the JSON Schema of the bodies with one.
  router.get('/', (_req, res) => {
    res.json({
      description: "The bank sandbox's test controls and ground truth (src/sandbox/routes/control.ts)",
      routes: CONTROL_ROUTES,
      bodies: Object.fromEntries(
        Object.entries(CONTROL_BODIES).map(([name, schema]) => [name, z.toJSONSchema(schema, { io: 'input' })]),
      ),
    });
  });

  const parse = <T>(schema: z.ZodType<T>, value: unknown): T => {
    const result = schema.safeParse(value ?? {});
    if (!result.success) throw Object.assign(new Error(z.prettifyError(result.error)), { status: 400 });
    return result.data;
  };

  router.post('/application-scripts', (req, res) => {
    const body = parse(
      z.object({ script: ApplicationScriptSchema, match: z.record(z.string(), z.unknown()).optional() }),
      req.body,
    );
    res.status(201).json({ ruleId: control.setApplicationScript(body.script, body.match) });
  });
  router.delete('/application-scripts', (_req, res) => {
    control.clearApplicationScripts();
    res.status(204).end();
  });
  router.get('/applications', (_req, res) => {
    res.json(control.applications());
  });
  router.get('/applications/:id', (req, res) => {
    const record = control.application(req.params.id);
    if (!record) return void res.status(404).json({ error: 'not_found', message: 'Unknown finance application' });
    res.json(record);
  });
  router.post('/applications/:id/status', (req, res) => {
    const { status } = parse(z.object({ status: z.string().min(1) }), req.body);
    if (!control.application(req.params.id)) {
      return void res.status(404).json({ error: 'not_found', message: 'Unknown finance application' });
    }
    control.setApplicationStatus(req.params.id, status);
    res.status(204).end();
  });
  router.post('/applications/:id/webhooks', (req, res) => {
    const { count } = parse(z.object({ count: z.number().int().min(1).max(10_000) }), req.body);
    if (!control.application(req.params.id)) {
      return void res.status(404).json({ error: 'not_found', message: 'Unknown finance application' });
    }
    void control.sendApplicationWebhooks(req.params.id, count).catch(() => undefined);
    res.status(202).json({ count });
  });
  router.put('/webhook-faults', (req, res) => {
    control.setWebhookFaults(parse(WebhookFaultsSchema, req.body));
    res.status(204).end();
  });
  router.put('/account-webhook', (req, res) => {
    try {
      control.setAccountWebhook(parse(AccountWebhookSettingsSchema, req.body));
    } catch (err) {
      throw Object.assign(err instanceof Error ? err : new Error(String(err)), { status: 400 });
    }
    res.json({ activeFrom: control.accountWebhookActiveFrom() });
  });
  router.put('/consents/:consentId', (req, res) => {
    control.setConsent(req.params.consentId, parse(ConsentSetupSchema, req.body));
    res.status(204).end();
  });
  router.get('/consents/:consentId', (req, res) => {
    res.json(control.consent(req.params.consentId));
  });
  router.post('/account-events', (req, res) => {
    const body = parse(z.record(z.string(), z.unknown()), req.body);
    void control.sendAccountEvent(body);
    res.status(202).end();
  });
  router.post('/consents/:consentId/transaction-events', (req, res) => {
    const request = parse(TransactionEventsRequestSchema, req.body);
    void control.emitTransactionEvents(req.params.consentId, request);
    res.status(202).end();
  });
  router.post('/api-faults', (req, res) => {
    control.injectApiFault(parse(ApiFaultSchema, req.body));
    res.status(204).end();
  });
  router.delete('/api-faults', (_req, res) => {
    control.clearApiFaults();
    res.status(204).end();
  });
  router.post('/revoke-tokens', (_req, res) => {
    control.revokeAllTokens();
    res.status(204).end();
  });
  router.post('/reset', (_req, res) => {
    control.reset();
    res.status(204).end();
  });
  router.get('/refresh-tasks', (_req, res) => {
    res.json(control.refreshTasks());
  });
  router.get('/account-webhooks', (_req, res) => {
    res.json(control.accountWebhooksSent());
  });
  router.get('/api-calls', (_req, res) => {
    res.json(control.apiCalls());
  });
  router.get('/token-requests', (_req, res) => {
    res.json({ count: control.tokenRequestCount() });
  });
  return router;
}
