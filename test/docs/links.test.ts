import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

/**
 * The README, CONTRIBUTING.md and docs/ point at each other and at the code: every relative link (inline or
 * reference-style) and anchor must resolve, and every repository path they name, quoted or not, must exist, so a moved
 * file or a renamed heading fails here rather than in a reader's browser. Anchors follow the forge's slugs
 * (github-slugger's rules: lower case, punctuation dropped, spaces to hyphens, repeats numbered). What comments and
 * docs may cite at all is test/docs/citations.test.ts's.
 */
const root = resolve(__dirname, '../..');

function markdownFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return markdownFiles(path);
    return name.endsWith('.md') ? [path] : [];
  });
}

/** The text a reader sees as Markdown: fenced code blocks, inline code and HTML comments removed. */
function prose(text: string): string {
  return text
    .replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '')
    .replace(/<!--[\s\S]*?-->/g, '')
    .replace(/`[^`\n]*`/g, '');
}

function slug(heading: string): string {
  return heading
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

function anchors(file: string): Set<string> {
  const seen = new Map<string, number>();
  const text = readFileSync(file, 'utf8').replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '');
  for (const [, heading] of text.matchAll(/^#{1,6} +(.+?) *#*$/gm)) {
    const base = slug(heading!);
    const count = seen.get(base);
    seen.set(base, (count ?? -1) + 1);
    if (count !== undefined) seen.set(`${base}-${count + 1}`, 0);
  }
  return new Set(seen.keys());
}

function links(file: string): string[] {
  const targets: string[] = [];
  const text = prose(readFileSync(file, 'utf8'));
  const inline = [...text.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)];
  // Reference-style definitions: `[d1]: docs/decisions/0001-create-response-body.md`.
  const definitions = [...text.matchAll(/^ {0,3}\[[^\]\n]+\]:[ \t]*<?([^\s>]+)>?/gm)];
  for (const [, target] of [...inline, ...definitions]) {
    if (!/^[a-z][a-z0-9+.-]*:/i.test(target!)) targets.push(target!);
  }
  return targets;
}

/**
 * Repository paths a page names, quoted or not (`src/api/server.ts`, docs/testing.md). Globs and templates
 * (`test/api/finance-application*.test.ts`, `test/<folder>`) are not paths; a sentence's full stop is not part of one.
 */
const REPOSITORY_PATH =
  /(?<![\w./-])((?:src|test|tools|bench|chaos|cluster|deploy|scripts|packages|docs|harness)\/[\w./-]*[\w/])(?![\w/*{<-]|\.[\w/*{<-])/g;

function repositoryPaths(text: string): { path: string; line: string }[] {
  return text
    .split('\n')
    .flatMap((line) => [...line.matchAll(REPOSITORY_PATH)].map(([, path]) => ({ path: path!, line })));
}

const files = [
  join(root, 'README.md'),
  join(root, 'CONTRIBUTING.md'),
  join(root, 'CHANGELOG.md'),
  ...markdownFiles(join(root, 'docs')),
];

describe('documentation links', () => {
  it.each(files.map((file) => [relative(root, file), file]))(
    '%s: every relative link and anchor resolves',
    (_, file) => {
      const broken: string[] = [];
      for (const target of links(file)) {
        const [path, anchor] = target.split('#', 2) as [string, string | undefined];
        const resolved = path === '' ? file : resolve(dirname(file), decodeURIComponent(path));
        if (!existsSync(resolved)) {
          broken.push(`${target}: no such file`);
        } else if (anchor !== undefined && resolved.endsWith('.md') && !anchors(resolved).has(anchor)) {
          broken.push(`${target}: no heading with this anchor in ${relative(root, resolved)}`);
        }
      }
      expect(broken).toEqual([]);
    },
  );

  it.each(files.map((file) => [relative(root, file), file]))('%s: every repository path it names exists', (_, file) => {
    // A path (`src/api/server.ts`, or src/api/server.ts) is a claim about the tree: a moved file must take its mentions
    // along. A line that says the file was removed may keep naming it.
    const cited = repositoryPaths(readFileSync(file, 'utf8'))
      .filter(({ line }) => !/\bremoved\b/.test(line))
      .map(({ path }) => path);
    expect(cited.filter((path) => !existsSync(join(root, path)))).toEqual([]);
  });

  it('finds the links it checks', () => {
    // A guard on the guard: the README links into docs/, so a parser that found nothing would be wrong.
    expect(links(join(root, 'README.md')).filter((l) => l.startsWith('docs/')).length).toBeGreaterThan(10);
    expect(links(join(root, 'README.md'))).toContain('docs/decisions/0001-create-response-body.md'); // a definition
    expect(
      repositoryPaths('see docs/testing.md. Or `src/api/server.ts`, test/api/*.test.ts and `test/<folder>`'),
    ).toEqual([
      { path: 'docs/testing.md', line: expect.any(String) },
      { path: 'src/api/server.ts', line: expect.any(String) },
    ]);
    expect(slug("Operations: an operator's page")).toBe('operations-an-operators-page');
    expect(slug('The cluster test: `npm run test:cluster`')).toBe('the-cluster-test-npm-run-testcluster');
  });

  it('keeps the README to a few screens, with the test command a newcomer runs', () => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    expect(readme.split('\n').length).toBeLessThanOrEqual(300);
    expect(readme).toMatch(/^npm test\b/m);
    expect(readme).toContain('npm install && npm start');
  });
});
