/**
 * The OpenAPI 3.1 document of both listeners, built from each resource's schemas.ts (src/api/resources/: the zod
 * schemas the routes themselves parse and answer with, so no second copy of the shapes); it imports no route.
 * Served at GET /openapi.json (src/api/resources/api-docs/routes.ts).
 */
import { createDocument } from 'zod-openapi';
import { apiDocsPaths } from '../resources/api-docs/schemas';
import { callbackSigningSecretPaths } from '../resources/callback-signing-secret/schemas';
import { codecPaths } from '../resources/codec/schemas';
import { consentRefreshPaths } from '../resources/consent-refresh/schemas';
import { consentPaths } from '../resources/consents/schemas';
import { accountWebhookPaths, financeApplicationWebhookPaths } from '../resources/webhooks/schemas';
import { financeApplicationPaths } from '../resources/finance-applications/schemas';
import { healthPaths } from '../resources/health/schemas';
import { operatorConsentPaths } from '../resources/operator-consents/schemas';
import { operatorAuditPaths } from '../resources/operator-audit/schemas';
import { undeliveredCallbackPaths } from '../resources/undelivered-callbacks/schemas';
import { CALLBACKS_TAG, merchantCallbackWebhooks } from './merchant-callbacks';
import { MERCHANT_API_KEY, OPERATOR_API_KEY, Tag, WEBHOOK_SECURITY_HEADER, type ApiPaths } from './describe';

export type OpenApiDocument = ReturnType<typeof createDocument>;

/** Every route module's operations; a new route module adds its description's paths here. */
export const ROUTE_MODULE_PATHS: readonly ApiPaths[] = [
  financeApplicationPaths,
  consentRefreshPaths,
  consentPaths,
  callbackSigningSecretPaths,
  undeliveredCallbackPaths,
  financeApplicationWebhookPaths,
  accountWebhookPaths,
  healthPaths,
  codecPaths,
  operatorConsentPaths,
  operatorAuditPaths,
  apiDocsPaths,
];

/** The public listener as the document's `servers` name it for the webhook paths (the bank calls PUBLIC_BASE_URL). */
const PUBLIC_SERVER = {
  url: '{publicBaseUrl}',
  description: 'Public listener (PORT): reached by the bank only',
  variables: { publicBaseUrl: { default: 'http://localhost:3000', description: 'PUBLIC_BASE_URL' } },
};

function merged(modules: readonly ApiPaths[]): ApiPaths {
  const paths: ApiPaths = {};
  for (const module of modules) {
    for (const [path, item] of Object.entries(module)) {
      const existing = paths[path] ?? {};
      for (const method of Object.keys(item)) {
        if (method in existing) throw new Error(`OpenAPI: ${method.toUpperCase()} ${path} is described twice`);
      }
      const operations = Object.values(item) as { 'x-listener'?: string }[];
      const publicOnly = operations.length > 0 && operations.every((o) => o['x-listener'] === 'public');
      paths[path] = { ...existing, ...item, ...(publicOnly ? { servers: [PUBLIC_SERVER] } : {}) };
    }
  }
  return paths;
}

/** Builds the document (pure: the same document every call). */
export function createOpenApiDocument(version = '0.1.0'): OpenApiDocument {
  return createDocument({
    openapi: '3.1.0',
    info: {
      title: 'paylater-temporal',
      version,
      description:
        "The merchant facade over Temporal (finance applications, consent refreshes), the bank's webhook " +
        'receivers, and the operator endpoints. Two listeners: the internal one (INTERNAL_PORT: facade, probes, ' +
        "metrics, codec, this description) and the public one (PORT: the bank's webhooks, /healthz and /readyz); each " +
        'operation names its own in `x-listener`. Every error answer is an RFC 9457 problem ' +
        '(`application/problem+json`: `type`, `title`, `status`, `detail`, and `errors` for field failures; the types ' +
        'are listed in docs/problems.md); a path that is no route answers 404, a described path asked with another ' +
        'method 405 with `Allow`. Unknown query parameters and body fields are refused (400) on every merchant route. ' +
        'TypeScript services may use the typed client package instead.',
    },
    servers: [{ url: '/', description: 'Internal listener (INTERNAL_PORT): the merchant facade and operators' }],
    tags: [...Object.values(Tag), CALLBACKS_TAG].map((name) => ({ name })),
    paths: merged(ROUTE_MODULE_PATHS),
    // What the service sends to merchants (signed callbacks): src/api/openapi/merchant-callbacks.ts.
    webhooks: merchantCallbackWebhooks,
    components: {
      securitySchemes: {
        [MERCHANT_API_KEY]: {
          type: 'http',
          scheme: 'bearer',
          description: 'A merchant API key from MERCHANT_API_KEYS: `Authorization: Bearer <key>`',
        },
        [OPERATOR_API_KEY]: {
          type: 'http',
          scheme: 'bearer',
          description:
            'An operator API key from OPERATOR_API_KEYS: `Authorization: Bearer <key>`; any other key, a merchant ' +
            'key included, is refused (401)',
        },
        [WEBHOOK_SECURITY_HEADER]: {
          type: 'apiKey',
          in: 'header',
          name: 'Authorization',
          description: "The bank's Webhook Security Header: must equal WEBHOOK_SECURITY_HEADER",
        },
      },
    },
  });
}

let cached: string | undefined;

/** The document as served (built once per process: it depends on code only). */
export function openApiJson(): string {
  cached ??= JSON.stringify(createOpenApiDocument());
  return cached;
}
