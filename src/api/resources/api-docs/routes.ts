import { dirname } from 'node:path';
import { Router, type Response } from 'express';
import { HttpError } from '../../problem-details';

import { DOCS_ASSETS } from './schemas';

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

/** The page's scripts, styles, images and calls: this origin only; inline styles for Swagger UI's own rendering. */
export const DOCS_CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const DOCS_ASSET_TYPES: Record<string, string> = { css: 'text/css', js: 'text/javascript', png: 'image/png' };

const PAGE = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>paylater-temporal API</title>
  <link rel="stylesheet" href="/docs/assets/swagger-ui.css">
  <link rel="icon" type="image/png" href="/docs/assets/favicon-32x32.png" sizes="32x32">
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="/docs/assets/swagger-ui-bundle.js"></script>
  <script src="/docs/init.js"></script>
</body>
</html>
`;

// A file of its own, not an inline script: the policy allows no inline script.
const INIT_SCRIPT = `window.ui = SwaggerUIBundle({
  url: '/openapi.json',
  dom_id: '#swagger-ui',
  deepLinking: true,
  persistAuthorization: false,
  validatorUrl: null,
  presets: [SwaggerUIBundle.presets.apis],
  layout: 'BaseLayout',
});
`;

const assetsDir = (): string => dirname(require.resolve('swagger-ui-dist/package.json'));

function page(res: Response, type: string, body: string): void {
  res.setHeader('Content-Security-Policy', DOCS_CONTENT_SECURITY_POLICY);
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.type(type).send(body);
}

export function apiDocsRoutes(deps: ApiDocsDeps): Router {
  const router = Router();
  // Described in schemas.ts.
  router.get('/openapi.json', (_req, res) => {
    res.type('application/json').send(deps.document());
  });
  router.get('/docs', (_req, res) => page(res, 'text/html', PAGE));
  router.get('/docs/init.js', (_req, res) => page(res, 'text/javascript', INIT_SCRIPT));
  router.get('/docs/assets/:file', (req, res, next) => {
    const { file } = req.params;
    if (!DOCS_ASSETS.includes(file)) return next(new HttpError(404, `No asset ${file}`));
    res.setHeader('Content-Security-Policy', DOCS_CONTENT_SECURITY_POLICY);
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.type(DOCS_ASSET_TYPES[file.split('.').pop()!]!);
    res.sendFile(file, { root: assetsDir(), maxAge: '1h' });
  });
  return router;
}
