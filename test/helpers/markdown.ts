/** Code blocks of a Markdown page, for tests that run what the docs show (so the two cannot drift). */

export interface CodeBlock {
  lang: string;
  code: string;
  /** The nearest heading above the block. */
  heading: string;
}

/** Every fenced block (```lang … ```) in order, with its language and the heading it sits under. */
export function codeBlocks(markdown: string): CodeBlock[] {
  const blocks: CodeBlock[] = [];
  let heading = '';
  let open: { lang: string; lines: string[] } | undefined;
  for (const line of markdown.split('\n')) {
    if (open) {
      if (/^```\s*$/.test(line)) {
        blocks.push({ lang: open.lang, code: open.lines.join('\n') + '\n', heading });
        open = undefined;
      } else open.lines.push(line);
      continue;
    }
    const fence = /^```(\S*)\s*$/.exec(line);
    if (fence) open = { lang: fence[1] ?? '', lines: [] };
    else if (/^#{1,6} /.test(line)) heading = line.replace(/^#+ /, '').trim();
  }
  if (open) throw new Error(`unclosed code block after "${heading}"`);
  return blocks;
}

/** The one ```ts block under the heading `heading`; throws when there is none or more than one. */
export function exampleUnder(markdown: string, heading: string, lang = 'ts'): string {
  const found = codeBlocks(markdown).filter((b) => b.heading === heading && b.lang === lang);
  if (found.length !== 1) throw new Error(`expected one \`\`\`${lang} block under "${heading}", found ${found.length}`);
  return found[0]!.code;
}
