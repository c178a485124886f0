import { ENV_SHAPE, VARIABLES } from './schema';

/** The markers between which docs/configuration.md holds the generated table. */
export const TABLE_START = '<!-- config-table:start -->';
export const TABLE_END = '<!-- config-table:end -->';

/** A variable's default for people: VARIABLES' words, else what the schema makes of the variable unset. */
function defaultOf(name: keyof typeof ENV_SHAPE): string {
  const given = VARIABLES[name].default;
  if (given !== undefined) return given;
  const parsed = ENV_SHAPE[name].safeParse(undefined);
  if (!parsed.success || parsed.data === undefined) return 'unset';
  if (parsed.data === '') return 'empty';
  // Scalars only (ports, counts, names, enum values): no variable defaults to an object.
  return `\`${typeof parsed.data === 'object' ? JSON.stringify(parsed.data) : String(parsed.data)}\``;
}

const cell = (text: string): string => text.replace(/\|/g, '\\|');

/** The Markdown table of every variable (name, default, processes, description), in the schema's order. */
export function configurationTable(): string {
  const rows = (Object.keys(ENV_SHAPE) as (keyof typeof ENV_SHAPE)[]).map((name) => {
    const doc = VARIABLES[name];
    return `| \`${name}\` | ${cell(defaultOf(name))} | ${doc.processes.join(', ')} | ${cell(doc.description)} |`;
  });
  return ['| variable | default | processes | description |', '| --- | --- | --- | --- |', ...rows].join('\n');
}

/** `text` with the table between the markers replaced by `table`; an error when the markers are missing. */
export function withConfigurationTable(text: string, table: string = configurationTable()): string {
  const start = text.indexOf(TABLE_START);
  const end = text.indexOf(TABLE_END);
  if (start < 0 || end < start) throw new Error(`the markers ${TABLE_START} and ${TABLE_END} are missing`);
  return `${text.slice(0, start + TABLE_START.length)}\n\n${table}\n\n${text.slice(end)}`;
}
