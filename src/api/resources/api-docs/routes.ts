import { Router } from 'express';
import { docsAsset, docsPage, openApiDocument } from './handlers';

/**
 * The API description on the internal listener, without a key (like /readyz: it tells nothing about any merchant's
 * data): `GET /openapi.json`, and `GET /docs`, an interactive reference (Swagger UI) whose assets come from the
 * swagger-ui-dist package (no CDN) under a Content-Security-Policy that allows this origin only. "Try it out"
 * calls the facade on the same origin with the key given under "Authorize".
 */
export interface ApiDocsDeps {
  /** The OpenAPI document as JSON text (openApiJson in src/api/openapi/document.ts). */
  document(): string;
}

export function apiDocsRoutes(deps: ApiDocsDeps): Router {
  const router = Router();
  // Described in schemas.ts.
  router.get('/openapi.json', openApiDocument(deps));
  router.get('/docs', docsPage('text/html'));
  router.get('/docs/init.js', docsPage('text/javascript'));
  router.get('/docs/assets/:file', docsAsset());
  return router;
}
