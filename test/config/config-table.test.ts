import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ENV_SHAPE, VARIABLES } from '../../src/config/schema';
import { configurationTable, TABLE_END, TABLE_START, withConfigurationTable } from '../../src/config/table';

/** Cells trimmed and the separator row reduced: prettier pads the file's table, the generator does not. */
const normalise = (table: string): string[] =>
  table
    .trim()
    .split('\n')
    .map((row) =>
      row
        .split(/(?<!\\)\|/)
        .map((c) => c.trim().replace(/^-+$/, '---'))
        .join('|'),
    );

function fileTable(): string {
  const text = readFileSync(join(__dirname, '..', '..', 'docs', 'configuration.md'), 'utf8');
  const start = text.indexOf(TABLE_START);
  const end = text.indexOf(TABLE_END);
  expect(start).toBeGreaterThanOrEqual(0);
  expect(end).toBeGreaterThan(start);
  return text.slice(start + TABLE_START.length, end);
}

describe('the configuration table (docs/configuration.md)', () => {
  it('is the one the schema generates (npm run docs:config rewrites it)', () => {
    expect(normalise(fileTable())).toEqual(normalise(configurationTable()));
  });

  it('has a row for every variable of the schema, and no other', () => {
    const names = normalise(fileTable())
      .slice(2)
      .map((row) => (row.split('|')[1] ?? '').replace(/`/g, ''));
    expect(names).toEqual(Object.keys(ENV_SHAPE));
    expect(Object.keys(VARIABLES).sort()).toEqual(Object.keys(ENV_SHAPE).sort());
  });

  it('shows the schema’s own defaults and fails on a changed one', () => {
    const table = configurationTable();
    expect(table).toContain('| `PORT` | `3000` |');
    expect(table).toContain('| `TASK_QUEUE` | `paylater` |');
    // A table written before a default changed no longer matches.
    const stale = table.replace('| `PORT` | `3000` |', '| `PORT` | `8080` |');
    expect(normalise(stale)).not.toEqual(normalise(configurationTable()));
  });

  it('is written between the markers, whatever was there', () => {
    const text = `intro\n\n${TABLE_START}\nold\n${TABLE_END}\n\nafter\n`;
    const written = withConfigurationTable(text, '| a |');
    expect(written).toBe(`intro\n\n${TABLE_START}\n\n| a |\n\n${TABLE_END}\n\nafter\n`);
    expect(() => withConfigurationTable('no markers')).toThrow(/markers/);
  });
});
