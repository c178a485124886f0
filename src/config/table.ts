import type { z } from 'zod';
import { ENV_SHAPE, READ_ELSEWHERE } from './schema';
import { docOf, SECTIONS, type Section, type VariableDoc } from './variable-docs';

/** The markers between which docs/configuration.md holds the generated tables. */
export const TABLE_START = '<!-- config-table:start -->';
export const TABLE_END = '<!-- config-table:end -->';

export interface DocumentedVariable {
  name: string;
  doc: VariableDoc;
  /** Its zod schema; none for the variables read outside it (READ_ELSEWHERE). */
  schema?: z.ZodType;
}

/** Every documented variable, by section (SECTIONS' order), in the schema's order within one. */
export function documentedVariables(): DocumentedVariable[] {
  const all: DocumentedVariable[] = [
    ...Object.entries(ENV_SHAPE).map(([name, schema]: [string, z.ZodType]) => ({
      name,
      doc: docOf(name, schema),
      schema,
    })),
    ...Object.entries(READ_ELSEWHERE).map(([name, doc]) => ({ name, doc })),
  ];
  const rank = Object.keys(SECTIONS);
  return all
    .map((v, i) => ({ v, i }))
    .sort((a, b) => rank.indexOf(a.v.doc.section) - rank.indexOf(b.v.doc.section) || a.i - b.i)
    .map(({ v }) => v);
}

/** What the schema makes of the variable unset, as the environment would write it; undefined when nothing. */
export function schemaDefault(schema: z.ZodType | undefined): string | undefined {
  const parsed = schema?.safeParse(undefined);
  if (!parsed?.success || parsed.data === undefined) return undefined;
  // Scalars only (ports, counts, names, enum values): no variable defaults to an object.
  const value = parsed.data as string | number | boolean | object;
  return typeof value === 'object' ? JSON.stringify(value) : String(value);
}

/** A variable's default for people: its documentation's words, else what the schema makes of it unset. */
export function defaultOf({ doc, schema }: DocumentedVariable): string {
  if (doc.default !== undefined) return doc.default;
  const value = schemaDefault(schema);
  if (value === undefined) return 'unset';
  return value === '' ? 'empty' : `\`${value}\``;
}

const cell = (text: string): string => text.replace(/\|/g, '\\|');

/** A repository path (docs/…) as a link from a page of docs/. */
const fromDocs = (path: string): string =>
  path.startsWith('docs/configuration.md#') ? path.slice('docs/configuration.md'.length) : path.replace(/^docs\//, '');

/** One section's heading, note and table of its variables (name, default, processes, description). */
function sectionTable(section: Section, variables: DocumentedVariable[]): string {
  const { title, see, note } = SECTIONS[section] as { title: string; see?: string; note?: string };
  const intro = [note, see && `See [${fromDocs(see)}](${fromDocs(see)}).`].filter(Boolean).join(' ');
  const rows = variables.map((v) => {
    const processes = v.doc.processes.join(', ') || 'tests';
    return `| \`${v.name}\` | ${cell(defaultOf(v))} | ${processes} | ${cell(v.doc.description)} |`;
  });
  return [
    `## ${title}`,
    ...(intro ? ['', intro] : []),
    '',
    '| variable | default | processes | description |',
    '| --- | --- | --- | --- |',
    ...rows,
  ].join('\n');
}

/** The Markdown tables of every variable, a section each, in the order of .env.example. */
export function configurationTable(): string {
  const variables = documentedVariables();
  return (Object.keys(SECTIONS) as Section[])
    .map((section) =>
      sectionTable(
        section,
        variables.filter((v) => v.doc.section === section),
      ),
    )
    .join('\n\n');
}

/** `text` with the tables between the markers replaced by `table`; an error when the markers are missing. */
export function withConfigurationTable(text: string, table: string = configurationTable()): string {
  const start = text.indexOf(TABLE_START);
  const end = text.indexOf(TABLE_END);
  if (start < 0 || end < start) throw new Error(`the markers ${TABLE_START} and ${TABLE_END} are missing`);
  return `${text.slice(0, start + TABLE_START.length)}\n\n${table}\n\n${text.slice(end)}`;
}
