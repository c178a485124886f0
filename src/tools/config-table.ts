import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { envExample } from '../config/env-example';
import { withConfigurationTable } from '../config/table';

/**
 * `npm run docs:config`: writes docs/configuration.md's tables (between its markers) and the whole of .env.example
 * from the schema's documentation (src/config/schema.ts). test/config/config-table.test.ts and env-example.test.ts
 * fail when either file is not what this writes; the script then runs prettier over the Markdown.
 */
function write(path: string, text: string): void {
  const before = readFileSync(path, 'utf8');
  if (text !== before) writeFileSync(path, text);
  process.stdout.write(`${text === before ? 'unchanged' : 'updated'}: ${path}\n`);
}

if (require.main === module) {
  const root = join(__dirname, '..', '..');
  const doc = join(root, 'docs', 'configuration.md');
  write(doc, withConfigurationTable(readFileSync(doc, 'utf8')));
  write(join(root, '.env.example'), envExample());
}
