import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { withConfigurationTable } from '../config/table';

/**
 * `npm run docs:config`: writes the configuration table (from src/config/schema.ts) into docs/configuration.md,
 * between its markers. test/config/config-table.test.ts fails when the file's table is not what this writes.
 */
if (require.main === module) {
  const path = join(__dirname, '..', '..', 'docs', 'configuration.md');
  const before = readFileSync(path, 'utf8');
  const after = withConfigurationTable(before);
  if (after !== before) writeFileSync(path, after);
  process.stdout.write(`${after === before ? 'unchanged' : 'updated'}: docs/configuration.md\n`);
}
