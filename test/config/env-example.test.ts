import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError, ENV_SHAPE } from '../../src/config/schema';

/** `.env.example` lists every variable of the schema (docs/operations.md, "Configuration"), set or commented out. */
describe('.env.example', () => {
  const text = readFileSync(join(__dirname, '..', '..', '.env.example'), 'utf8');
  /** The variables it lists: `NAME=` or `# NAME=` at the start of a line. */
  const listed = new Set([...text.matchAll(/^(?:# )?([A-Z][A-Z0-9_]*)=/gm)].map((m) => m[1]!));

  it('lists every variable of the schema', () => {
    const missing = Object.keys(ENV_SHAPE).filter((name) => !listed.has(name));
    expect(missing).toEqual([]);
  });

  it('gives each of them a hint: a comment line above it', () => {
    const lines = text.split('\n');
    const bare = Object.keys(ENV_SHAPE).filter((name) => {
      const at = lines.findIndex((line) => new RegExp(`^(?:# )?${name}=`).test(line));
      // The comment may sit above a group of variables: walk up over the group's other entries.
      let i = at - 1;
      while (i >= 0 && /^(?:# )?[A-Z][A-Z0-9_]*=/.test(lines[i]!)) i--;
      return i < 0 || !lines[i]!.startsWith('#');
    });
    expect(bare).toEqual([]);
  });

  it('is where configuration errors send the reader, with docs/configuration.md', () => {
    expect(new ConfigError([{ variable: 'PORT', message: 'bad' }]).message).toMatch(
      /See \.env\.example and docs\/configuration\.md\.$/,
    );
  });
});
