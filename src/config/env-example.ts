import { defaultOf, documentedVariables, schemaDefault, type DocumentedVariable } from './table';
import { SECTIONS, type Section } from './variable-docs';

/** What .env is, above every generated line of .env.example. */
const HEADER = [
  'Copy to .env (git-ignored, never in the image) or set in the environment. Every entry point (npm start, npm run ' +
    'worker|api|sandbox, node dist/...) reads .env from its working directory at start; a variable already set in the ' +
    'environment wins over the file, even when set empty. Syntax: Node\'s (KEY=value, # comments, "quoted values"; ' +
    'quote a value that contains #). The start-up log names the variables taken from the file, never their values.',
  "Every variable is optional for npm start: no Temporal address (neither TEMPORAL_ADDRESS nor a profile's) starts " +
    'the embedded Temporal dev server, unset BANK_BASE_URL the bank sandbox. The lines not commented out are the ' +
    "schema's defaults, so copying this file changes nothing until a value is edited.",
  'Generated from src/config/schema.ts by npm run docs:config, with docs/configuration.md (each default and the ' +
    'processes that read it): edit the schema, not this file; test/config/env-example.test.ts fails when they differ.',
];

const WIDTH = 120;

/** `text` as `# ` comment lines of at most WIDTH characters (a longer word keeps its own line). */
function comment(text: string): string[] {
  const lines: string[] = [];
  let line = '#';
  for (const word of text.split(/\s+/).filter(Boolean)) {
    if (line.length + 1 + word.length > WIDTH && line !== '#') {
      lines.push(line);
      line = '#';
    }
    line += ` ${word}`;
  }
  if (line !== '#') lines.push(line);
  return lines;
}

/** Markdown's code quotes dropped: .env.example is read as plain text. */
const plain = (text: string): string => text.replace(/`/g, '');
/** `text` ending as a sentence does. */
const sentence = (text: string): string => (/[.:!?]$/.test(text) ? text : `${text}.`);

/** A variable's hint and its line(s): set to the schema's default, or commented out with an example. */
function variableLines(v: DocumentedVariable): string[] {
  const fallback = v.doc.set ? v.doc.default : defaultOf(v);
  const hint =
    sentence(plain(v.doc.description)) +
    (fallback === undefined || fallback === 'unset' ? '' : ` Default: ${sentence(plain(fallback))}`);
  if (v.doc.set) return [...comment(hint), `${v.name}=${schemaDefault(v.schema) ?? ''}`];
  const examples = v.doc.example ?? schemaDefault(v.schema) ?? '';
  const values = typeof examples === 'string' ? [examples] : examples;
  return [...comment(hint), ...values.map((value) => `# ${v.name}=${value}`)];
}

function sectionLines(section: Section, variables: DocumentedVariable[]): string[] {
  const { title, see, note } = SECTIONS[section] as { title: string; see?: string; note?: string };
  return [
    `# --- ${title}${see ? ` (${see})` : ''} ---`,
    ...(note ? comment(plain(note)) : []),
    ...variables.flatMap(variableLines),
  ];
}

/** The whole of .env.example: the header, then every documented variable by section. */
export function envExample(): string {
  const variables = documentedVariables();
  const sections = (Object.keys(SECTIONS) as Section[]).map((section) =>
    sectionLines(
      section,
      variables.filter((v) => v.doc.section === section),
    ).join('\n'),
  );
  return `${HEADER.flatMap(comment).join('\n')}\n\n${sections.join('\n\n')}\n`;
}
