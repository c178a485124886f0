import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Script } from 'node:vm';
import ts from 'typescript';
import { applyPatch, resultMarkPatch, timerAtStartPatch, VARIANT_MARK_FIELD } from '../../tools/cluster/build-variant';

const root = join(__dirname, '..', '..');

/** src/workflows/finance-application/workflow.ts as `npm run build` compiles it (tsconfig.json's options). */
function compiledFinanceApplication(): string {
  const { config } = ts.readConfigFile(join(root, 'tsconfig.json'), (path) => ts.sys.readFile(path));
  const { options } = ts.convertCompilerOptionsFromJson((config as { compilerOptions: object }).compilerOptions, root);
  const source = readFileSync(join(root, 'src', 'workflows', 'finance-application', 'workflow.ts'), 'utf8');
  return ts.transpileModule(source, { compilerOptions: options }).outputText;
}

/** Compiles (does not run) a CommonJS module's text: a syntax error throws. */
const parses = (text: string) => new Script(`(function (exports, require, module) {${text}\n})`);

describe("the cluster's build variants (the rolling upgrade's B and C)", () => {
  const compiled = compiledFinanceApplication();

  test("B's patch applies once to today's compiled workflow: the result gains the mark before the finished log", () => {
    const patched = applyPatch(compiled, resultMarkPatch('B'));
    expect(() => parses(patched)).not.toThrow();
    const mark = patched.indexOf(`state.${VARIANT_MARK_FIELD} = "B";`);
    expect(mark).toBeGreaterThan(0);
    expect(mark).toBeLessThan(patched.indexOf("'Finance application finished'"));
  });

  test("C's patch applies once: a timer before the workflow's first command", () => {
    const patched = applyPatch(compiled, timerAtStartPatch());
    expect(() => parses(patched)).not.toThrow();
    const body = patched.slice(patched.indexOf('async function financeApplicationWorkflow('));
    expect(body.indexOf('await (0, workflow_1.sleep)(1);')).toBeLessThan(body.indexOf('upsertSearchAttributes'));
  });

  test('a patch whose text is missing or ambiguous is refused, naming the file', () => {
    const patch = { file: 'workflows/x.js', find: 'needle', replace: 'thread' };
    expect(applyPatch('a needle here', patch)).toBe('a thread here');
    expect(() => applyPatch('no match', patch)).toThrow("workflows/x.js: the patch's text occurs nowhere");
    expect(() => applyPatch('needle needle', patch)).toThrow('occurs more than once');
  });
});
