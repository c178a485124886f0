import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { createMetrics } from '../../src/api/metrics';
import { WorkflowMetric } from '../../src/shared/metric-names';
import { TEMPORAL_SDK_METRICS, createWorkerMetrics } from '../../src/worker/metrics';
import { findPromtool, requirePromtool } from '../helpers/prometheus';

/**
 * deploy/prometheus and deploy/grafana: promtool checks the rules and runs their unit tests, and every series an
 * alert or a dashboard panel reads is one the code defines (prom-client, the workflows' metricMeter) or the SDK
 * exports. promtool comes from `npm run toolchain` (scripts/temporal-toolchain.mjs); without it these tests are
 * skipped on a workstation and FAIL in CI.
 */
const root = join(__dirname, '..', '..');
const rulesDir = join(root, 'deploy', 'prometheus');
const ruleFiles = readdirSync(rulesDir).filter((f) => f.endsWith('.rules.yml'));
const testFiles = readdirSync(rulesDir).filter((f) => f.endsWith('.test.yml'));

const promtool = findPromtool();
const withPromtool = requirePromtool('the deploy/prometheus checks');

function runPromtool(args: string[]): { status: number | null; output: string } {
  if (!promtool)
    throw new Error('promtool is not installed: run `npm run toolchain` (Debian: apt-get install prometheus)');
  const result = spawnSync(promtool, args, { cwd: rulesDir, encoding: 'utf8', timeout: 60_000 });
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}

interface RuleGroup {
  name: string;
  rules: { alert?: string; record?: string; expr: string }[];
}
const rules: RuleGroup['rules'] = ruleFiles.flatMap((f) =>
  (parse(readFileSync(join(rulesDir, f), 'utf8')) as { groups: RuleGroup[] }).groups.flatMap((g) => g.rules),
);

describe('Prometheus alerting rules (deploy/prometheus)', () => {
  it('has rule files and a unit-test file beside each', () => {
    expect(ruleFiles.length).toBeGreaterThan(0);
    for (const f of ruleFiles) expect(testFiles).toContain(f.replace(/\.rules\.yml$/, '.test.yml'));
  });

  withPromtool('passes promtool check rules', () => {
    const { status, output } = runPromtool(['check', 'rules', ...ruleFiles]);
    expect({ status, output }).toMatchObject({ status: 0 });
  });

  withPromtool('passes promtool test rules', () => {
    const { status, output } = runPromtool(['test', 'rules', ...testFiles]);
    expect({ status, output }).toMatchObject({ status: 0 });
  });

  it('tests every alert, firing and not', () => {
    const tested = testFiles.flatMap((f) =>
      (
        parse(readFileSync(join(rulesDir, f), 'utf8')) as {
          tests: { alert_rule_test?: { alertname: string; exp_alerts?: unknown[] }[] }[];
        }
      ).tests.flatMap((t) => t.alert_rule_test ?? []),
    );
    for (const rule of rules.filter((r) => r.alert)) {
      const cases = tested.filter((t) => t.alertname === rule.alert);
      expect({ alert: rule.alert, fires: cases.some((c) => (c.exp_alerts ?? []).length > 0) }).toEqual({
        alert: rule.alert,
        fires: true,
      });
      expect({ alert: rule.alert, quiet: cases.some((c) => (c.exp_alerts ?? []).length === 0) }).toEqual({
        alert: rule.alert,
        quiet: true,
      });
    }
  });
});

/** Every name a scrape can carry: prom-client's registries, the workflows' metricMeter (as exported), the SDK's. */
async function knownMetricNames(): Promise<Set<string>> {
  const names = new Set<string>(TEMPORAL_SDK_METRICS);
  for (const registry of [createMetrics().registry, createWorkerMetrics({ defaultMetrics: false }).registry]) {
    for (const m of await registry.getMetricsAsJSON()) names.add(m.name);
  }
  // The Runtime's exporter adds _total to counters (countersTotalSuffix); the one histogram keeps its name.
  for (const name of Object.values(WorkflowMetric))
    names.add(name === WorkflowMetric.webhookDelay ? name : `${name}_total`);
  return names;
}

const PROMQL_WORDS = new Set([
  'and',
  'or',
  'unless',
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'bool',
  'offset',
  'inf',
  'nan',
]);

/** The series names a PromQL expression reads (functions, label matchers, durations, keywords left out). */
function seriesIn(expr: string): string[] {
  const stripped = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""') // strings
    .replace(/\{[^}]*\}/g, '') // label matchers
    .replace(/\[[^\]]*\]/g, '') // ranges
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, '') // label lists
    .replace(/\$[A-Za-z_]\w*/g, ''); // Grafana variables
  const names: string[] = [];
  for (const m of stripped.matchAll(/[A-Za-z_:][A-Za-z0-9_:]*/g)) {
    const word = m[0];
    const next = stripped.slice(m.index + word.length).trimStart();
    if (next.startsWith('(') || PROMQL_WORDS.has(word.toLowerCase())) continue;
    names.push(word);
  }
  return names;
}

/** A histogram's series (_bucket, _sum, _count) belong to its name. */
const baseName = (name: string, known: Set<string>) =>
  known.has(name) ? name : name.replace(/_(bucket|sum|count)$/, '');

describe('metric names in the rules and the dashboard', () => {
  const dashboard = JSON.parse(readFileSync(join(root, 'deploy', 'grafana', 'paylater.json'), 'utf8')) as {
    panels: { title: string; targets?: { expr: string }[] }[];
  };
  const dashboardExprs = dashboard.panels.flatMap((p) =>
    (p.targets ?? []).map((t) => ({ where: p.title, expr: t.expr })),
  );
  const ruleExprs = rules.map((r) => ({ where: r.alert ?? r.record ?? '?', expr: r.expr }));

  it('finds the series of an expression', () => {
    expect(
      seriesIn(
        'histogram_quantile(0.95, sum by (le, task_queue) (rate(x_bucket{a!~"b|c"}[5m]))) > 10 and on () (sum(increase(y_total[1h])) or vector(0)) == 0',
      ),
    ).toEqual(['x_bucket', 'y_total']);
  });

  it('the dashboard is a Grafana dashboard with panels reading series', () => {
    expect(dashboard.panels.length).toBeGreaterThan(0);
    expect(dashboardExprs.length).toBeGreaterThan(0);
  });

  it('every series in them is defined by the code or exported by the SDK', async () => {
    const known = await knownMetricNames();
    const unknown = [...ruleExprs, ...dashboardExprs].flatMap(({ where, expr }) =>
      seriesIn(expr)
        .filter((name) => !known.has(baseName(name, known)))
        .map((name) => `${where}: ${name}`),
    );
    expect(unknown).toEqual([]);
    // Each business series the code defines is on the dashboard.
    const shown = new Set(dashboardExprs.flatMap(({ expr }) => seriesIn(expr).map((n) => baseName(n, known))));
    for (const name of Object.values(WorkflowMetric)) {
      expect(shown).toContain(name === WorkflowMetric.webhookDelay ? name : `${name}_total`);
    }
  });
});
