import { dirname } from 'node:path';
import type { RequestHandler, Response } from 'express';
import { HttpError } from '../../problem-details';
import { DOCS_ASSETS } from './schemas';

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

/** `GET /openapi.json`: the document as served. */
export function openApiDocument(deps: { document(): string }): RequestHandler {
  return (_req, res) => {
    res.type('application/json').send(deps.document());
  };
}

/** `GET /docs` (the page) and `GET /docs/init.js` (its script). */
export function docsPage(type: 'text/html' | 'text/javascript'): RequestHandler {
  const body = type === 'text/html' ? PAGE : INIT_SCRIPT;
  return (_req, res) => page(res, type, body);
}

/** `GET /docs/assets/:file`: Swagger UI's files, from swagger-ui-dist. */
export function docsAsset(): RequestHandler {
  return (req, res, next) => {
    const file = String(req.params.file);
    if (!DOCS_ASSETS.includes(file)) return next(new HttpError(404, `No asset ${file}`));
    res.setHeader('Content-Security-Policy', DOCS_CONTENT_SECURITY_POLICY);
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.type(DOCS_ASSET_TYPES[file.split('.').pop()!]!);
    res.sendFile(file, { root: assetsDir(), maxAge: '1h' });
  };
}
