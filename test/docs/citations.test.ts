import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';

/**
 * A clone explains itself (CONTRIBUTING.md, "Comments, docs and decisions"): what comments and docs cite, a reader of
 * the repository can open. So no comment or page names
 * - the style guide or the design card the project was started from, nor any other file kept outside the repository:
 *   the conventions are CONTRIBUTING.md's, the bank's document is cited through docs/bank-interface.md;
 * - an issue by its number: a decision record in docs/decisions/ says why (the records themselves may tell their
 *   history). Another project's issue is written owner/repo#N.
 * Whether the links and repository paths in the docs resolve is test/docs/links.test.ts's.
 */
const root = resolve(__dirname, '../..');

/** Where comments and docs live: the code's trees and the repository's own files. */
const TREES = ['src', 'test', 'tools', 'scripts', 'packages', 'docs', 'deploy', '.ci'];
const ROOT_FILES = [
  'README.md',
  'CONTRIBUTING.md',
  'Dockerfile',
  'docker-compose.yml',
  'eslint.config.mjs',
  '.dependency-cruiser.cjs',
  '.env.example',
];
/** Installed, built or recorded, not written: dependencies, build output, the recorded histories (event data). */
const SKIPPED = [/(^|\/)node_modules$/, /(^|\/)dist(-[\w-]+)?$/, /^test\/histories$/];
const BINARY = /\.(png|jpe?g|gif|ico|woff2?|gz|tgz|zip)$/;

function filesUnder(path: string): string[] {
  const rel = relative(root, path);
  if (SKIPPED.some((pattern) => pattern.test(rel))) return [];
  if (!statSync(path).isDirectory()) return BINARY.test(path) ? [] : [rel];
  return readdirSync(path).flatMap((name) => filesUnder(join(path, name)));
}

const files = [...TREES.map((tree) => join(root, tree)), ...ROOT_FILES.map((file) => join(root, file))].flatMap(
  filesUnder,
);

interface Rule {
  what: string;
  pattern: RegExp;
  appliesTo: (file: string) => boolean;
}

const everywhere = (): boolean => true;

const RULES: Rule[] = [
  {
    what: 'a guide kept outside the repository (cite CONTRIBUTING.md or the docs/ page instead)',
    pattern: /\b(?:STYLE|DESIGN)\.md\b/g,
    appliesTo: everywhere,
  },
  {
    what: 'a folder outside the repository',
    pattern: /\/work\/shared\b|\.\.\/shared\/[\w-]+\.md\b/g,
    appliesTo: everywhere,
  },
  {
    what: 'an issue number (cite the decision record in docs/decisions/, or nothing)',
    pattern: /[Ii]ssues? [0-9]+/g,
    appliesTo: (file) => !file.startsWith('docs/decisions/'),
  },
  {
    // Allowed: docs/bank-interface.md, and a Markdown link's text or target ([bank-interface.md](bank-interface.md)).
    what: "the bank's document by a name the repository does not hold (cite docs/bank-interface.md)",
    pattern: /(?<!docs\/|\]\(|\]\(\.\.\/|\[)\bbank-interface\.md\b/g,
    appliesTo: everywhere,
  },
];

/** Each place `rule` finds in `text`: `line: the words`. */
function findings(rule: Rule, text: string): string[] {
  return text.split('\n').flatMap((line, i) => [...line.matchAll(rule.pattern)].map((m) => `${i + 1}: ${m[0]}`));
}

describe('citations in comments and docs', () => {
  it.each(RULES.map((rule) => [rule.what, rule]))('none names %s', (_, rule) => {
    const found = files
      .filter((file) => rule.appliesTo(file))
      .flatMap((file) => findings(rule, readFileSync(join(root, file), 'utf8')).map((at) => `${file}:${at}`));
    expect(found).toEqual([]);
  });

  it('reads every tree it guards', () => {
    // A guard on the guard: a walk that found nothing would pass everything.
    for (const tree of TREES) expect(files.some((file) => file.startsWith(`${tree}/`))).toBe(true);
    expect(files).toEqual(
      expect.arrayContaining(['README.md', 'CONTRIBUTING.md', 'src/shared/bank-wire.ts', '.ci/run']),
    );
    expect(files.some((file) => file.startsWith('test/histories/') || file.includes('node_modules/'))).toBe(false);
  });

  it('knows a citation from a reference it allows', () => {
    // Built from parts, so this file does not cite what it shows.
    const rule = (n: number): Rule => RULES[n]!;
    const caught = (n: number, text: string): boolean => findings(rule(n), text).length > 0;
    const bankDocument = `${'bank'}-interface.md`;
    expect(caught(0, `the determinism boundary (${'STYLE'}.md, 1)`)).toBe(true);
    expect(caught(0, `the design card (${'DESIGN'}.md)`)).toBe(true);
    expect(caught(1, `read ${'/work'}/shared/${bankDocument}`)).toBe(true);
    expect(caught(1, `see ${'..'}/shared/${bankDocument}`)).toBe(true);
    expect(caught(2, `the target of ${'Issue'} 22`)).toBe(true);
    expect(caught(2, `${'issues'} 4 and 9`)).toBe(true);
    expect(caught(2, 'sdk-typescript#2227, python/cpython#106905, zod issues, issue.path')).toBe(false);
    expect(caught(3, `(${bankDocument} 6.1)`)).toBe(true);
    expect(caught(3, `\`${bankDocument}\``)).toBe(true);
    expect(caught(3, `(docs/${bankDocument} 6.1)`)).toBe(false);
    expect(caught(3, `[${bankDocument}](${bankDocument}#61-finance-application-webhook)`)).toBe(false);
    expect(caught(3, `[the bank's interface, section 4.2](../${bankDocument}#42-create-finance-application)`)).toBe(
      false,
    );
  });
});
