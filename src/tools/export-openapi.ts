import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openApiJson } from '../api/openapi/document';

/**
 * `npm run docs:openapi`: writes the OpenAPI document the internal listener serves at /openapi.json into
 * docs/openapi.json, for readers and tools that do not run the service. test/api/openapi.test.ts fails when the
 * file differs from what the server serves.
 */
if (require.main === module) {
  const path = join(__dirname, '..', '..', 'docs', 'openapi.json');
  writeFileSync(path, `${JSON.stringify(JSON.parse(openApiJson()), null, 2)}\n`);
  process.stdout.write('written: docs/openapi.json\n');
}
