import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { ENV_SHAPE, READ_ELSEWHERE, SECTIONS, VARIABLE_DOCS } from '../../src/config/schema';
import {
  configurationTable,
  documentedVariables,
  TABLE_END,
  TABLE_START,
  withConfigurationTable,
} from '../../src/config/table';

const path = join(__dirname, '..', '..', 'docs', 'configuration.md');

const prettier = join(__dirname, '..', '..', 'node_modules', 'prettier', 'bin', 'prettier.cjs');

/** What `npm run docs:config` writes: the generated tables between the markers, then prettier over the file. */
function generated(text: string): string {
  // prettier's API loads ES modules, which jest's CommonJS runtime cannot: its CLI in a child process instead.
  return execFileSync(process.execPath, [prettier, '--stdin-filepath', path], {
    input: withConfigurationTable(text),
    encoding: 'utf8',
  });
}

describe('the configuration tables (docs/configuration.md)', () => {
  it('are exactly what the schema generates (npm run docs:config rewrites them)', () => {
    const text = readFileSync(path, 'utf8');
    expect(text).toBe(generated(text));
  });

  it('fail on a drifted file: a changed default, description or row', () => {
    const text = readFileSync(path, 'utf8');
    for (const drifted of [
      text.replace(/\| `PORT`( +)\| `3000`/, '| `PORT`$1| `8080`'),
      text.replace('pino level', 'the log level'),
      text.replace(/^\| `LOG_LEVEL`.*\n/m, ''),
    ]) {
      expect(drifted).not.toBe(text);
      expect(drifted).not.toBe(generated(drifted));
    }
  });

  it('document every variable of the schema, once, in a section', () => {
    for (const [name, schema] of Object.entries(ENV_SHAPE)) {
      const doc = VARIABLE_DOCS.get(schema);
      expect({ name, documented: doc !== undefined && doc.description.length > 0 }).toEqual({ name, documented: true });
      expect(Object.keys(SECTIONS)).toContain(doc!.section);
    }
    const names = documentedVariables().map((v) => v.name);
    expect(names.sort()).toEqual([...Object.keys(ENV_SHAPE), ...Object.keys(READ_ELSEWHERE)].sort());
    expect(new Set(names).size).toBe(names.length);
  });

  it('show the schema’s own defaults', () => {
    const table = configurationTable();
    expect(table).toContain('| `PORT` | `3000` |');
    expect(table).toContain('| `TASK_QUEUE` | `paylater` |');
    expect(table).toContain("| `BANK_CLIENT_SECRET` | the sandbox's when embedded; required with a real bank |");
    expect(table).toContain('| `WORKER_MAX_CACHED_WORKFLOWS` |');
  });

  it('are written between the markers, whatever was there', () => {
    const text = `intro\n\n${TABLE_START}\nold\n${TABLE_END}\n\nafter\n`;
    const written = withConfigurationTable(text, '| a |');
    expect(written).toBe(`intro\n\n${TABLE_START}\n\n| a |\n\n${TABLE_END}\n\nafter\n`);
    expect(() => withConfigurationTable('no markers')).toThrow(/markers/);
  });
});
