/**
 * The import rule of the layout: each layer imports only from its own layer and the ones below it, no module is in
 * an import circle, workflow code imports only what is deterministic, and the tools (tools/: bench, chaos, cluster and
 * their harness) import no test code. Run by `npm run lint` (dependency-cruiser needs Node 22 or 24);
 * test/lint/layers.test.ts proves each rule fires.
 *
 * A folder is given with its loose-file form too (`src/client.ts` and `src/client/`).
 */

/** A path pattern for modules under src/: a folder (with its files) or a file, by name without extension. */
const src = (...names) => `^src/(${names.join('|')})(/|\\.ts$)`;

/** Lowest first. An import may go to its own layer or any layer below, never above. */
const LAYERS = [
  {
    name: 'base',
    // Plain, pure code every other layer uses: ids, messages, rules; keys, signatures, guards.
    path: src('shared', 'security'),
  },
  {
    name: 'infrastructure',
    // The bank client and activities, the Temporal connection and data converter, tracing and logging, the HTTP
    // client, the stores of the audit trail and of the merchant keys, and the configuration (its schema and each
    // process's settings: the api and the worker read their types).
    path: src('activities', 'temporal', 'telemetry', 'http-client', 'audit', 'keys', 'config'),
  },
  {
    name: 'workflows',
    path: src('workflows'),
  },
  {
    name: 'processes',
    // Each process's composition: the worker, the API (its listeners, routes and entry), the merchant's typed
    // client (and its package entry src/client.ts), the bank sandbox, and what every entry point runs first (entry/).
    path: src('worker', 'api', 'client', 'sandbox', 'entry'),
  },
  {
    name: 'entry points',
    // The embedded stack and the operator tools: they start processes, nothing imports them.
    path: src('main', 'tools'),
  },
];

const layerRules = LAYERS.slice(0, -1).map((layer, i) => ({
  name: `layer-${layer.name.replace(/ /g, '-')}`,
  severity: 'error',
  comment:
    `${layer.name} imports only from its own layer or below (${LAYERS.slice(0, i + 1)
      .map((l) => l.name)
      .join(', ')}), ` + 'never from a layer above it (.dependency-cruiser.cjs LAYERS).',
  from: { path: layer.path },
  to: { path: LAYERS.slice(i + 1).map((l) => l.path) },
}));

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'An import circle: each module of it can only be understood (and loaded) with all the others.',
      from: {},
      to: { circular: true },
    },
    ...layerRules,
    {
      name: 'workflows-deterministic',
      severity: 'error',
      comment:
        'Workflow code runs in the deterministic sandbox: it imports only @temporalio/workflow (and ' +
        '@temporalio/common, the deterministic part it re-exports), src/shared and other workflow modules (and ' +
        'activities, type-only: the next rule). No Node built-ins, no other package.',
      from: { path: '^src/workflows/', pathNot: '^src/workflows/interceptors\\.ts$' },
      to: {
        pathNot: ['^src/(workflows|shared)/', '(^|/)node_modules/@temporalio/(workflow|common)/', '^src/activities/'],
      },
    },
    {
      name: 'workflow-interceptors-deterministic',
      severity: 'error',
      comment:
        "The workflow interceptors module adds OpenTelemetry's workflow interceptors (made for the sandbox) and " +
        'otherwise follows the rule of workflow code.',
      from: { path: '^src/workflows/interceptors\\.ts$' },
      to: {
        pathNot: [
          '^src/(workflows|shared)/',
          '(^|/)node_modules/@temporalio/(workflow|common|interceptors-opentelemetry)/',
          '(^|/)node_modules/@opentelemetry/api/',
        ],
      },
    },
    {
      name: 'workflows-activities-type-only',
      severity: 'error',
      comment: 'Workflows call activities through proxyActivities: they import the activity types, never the code.',
      from: { path: '^src/workflows/' },
      to: { path: '^src/activities/', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'sandbox-only-from-entry-points',
      severity: 'error',
      comment:
        'The bank sandbox is a process of its own (a stand-in for the bank): only an entry point (the embedded ' +
        'stack) starts it; the service reaches it over HTTP like the real bank, never by import.',
      from: { path: '^src/', pathNot: [src('sandbox'), src('main', 'tools')] },
      to: { path: src('sandbox') },
    },
    {
      name: 'api-schemas-flow-outward',
      severity: 'error',
      comment:
        "An HTTP resource's schemas (src/api/resources/<resource>/schemas.ts) and the OpenAPI document built from " +
        'them import no route, handler or receiver: the schemas flow outward to the code that uses them, never back.',
      from: { path: ['^src/api/resources/[^/]+/schemas\\.ts$', '^src/api/openapi/'] },
      to: { path: '^src/api/resources/', pathNot: '^src/api/resources/[^/]+/schemas\\.ts$' },
    },
    {
      name: 'tools-import-no-tests',
      severity: 'error',
      comment: 'bench, chaos and cluster share src/ and tools/harness/, never test code (test/).',
      from: { path: '^tools/' },
      to: { path: '^test/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)(dist|dist-[a-z]+)/' },
    // Type-only imports count too (a circle through types is still a circle), and can be told apart.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js', '.json'] },
  },
};
