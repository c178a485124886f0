/**
 * The API description routes (routes.ts): their OpenAPI operations. Imported by the route and by
 * src/api/openapi/document.ts.
 */
import { z } from 'zod';
import { errors, json, open, Tag, type ApiPaths } from '../../openapi/describe';

/** The swagger-ui-dist files the page loads (an allow-list: nothing else of the package is served). */
export const DOCS_ASSETS = ['swagger-ui.css', 'swagger-ui-bundle.js', 'favicon-32x32.png', 'favicon-16x16.png'];
const text = (type: string, description: string) => ({ description, content: { [type]: { schema: z.string() } } });

/** The routes' OpenAPI operations (gathered by src/api/openapi/document.ts). */
export const apiDocsPaths: ApiPaths = {
  '/openapi.json': {
    get: {
      'x-listener': 'internal',
      operationId: 'openApiDocument',
      tags: [Tag.Operations],
      summary: 'This OpenAPI 3.1 document',
      security: open,
      responses: {
        '200': json(z.record(z.string(), z.unknown()).meta({ description: 'An OpenAPI 3.1 document' }), 'The document'),
      },
    },
  },
  '/docs': {
    get: {
      'x-listener': 'internal',
      operationId: 'apiReference',
      tags: [Tag.Operations],
      summary: 'Interactive API reference (Swagger UI, served from this listener)',
      security: open,
      responses: { '200': text('text/html', 'The reference page') },
    },
  },
  '/docs/init.js': {
    get: {
      'x-listener': 'internal',
      operationId: 'apiReferenceScript',
      tags: [Tag.Operations],
      summary: "The reference page's start-up script",
      security: open,
      responses: { '200': text('text/javascript', 'Script') },
    },
  },
  '/docs/assets/{file}': {
    get: {
      'x-listener': 'internal',
      operationId: 'apiReferenceAsset',
      tags: [Tag.Operations],
      summary: "The reference page's assets (from the swagger-ui-dist package)",
      security: open,
      requestParams: { path: z.object({ file: z.enum(DOCS_ASSETS) }) },
      responses: {
        '200': {
          description: 'The file',
          content: {
            'text/css': { schema: z.string() },
            'text/javascript': { schema: z.string() },
            'image/png': { schema: z.string().meta({ contentMediaType: 'image/png' }) },
          },
        },
        ...errors([404, 'Not one of the assets']),
      },
    },
  },
};
