// Makes the Kubernetes JSON schemas of the PyPI package kubernetes-validate standalone for kubeconform
// (scripts/helm-tools.sh): each kind's file there refers to one shared definitions file by an absolute URL, which
// kubeconform would try to fetch. Each output file is the kind's schema with the definitions it reaches copied in.
// Usage: node scripts/kubernetes-schemas.mjs <local-strict folder> <output folder>
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const [from, to] = process.argv.slice(2);
if (!from || !to) {
  console.error('usage: node scripts/kubernetes-schemas.mjs <local-strict folder> <output folder>');
  process.exit(2);
}
const SHARED = '/api/_definitions.json#';
const definitions = JSON.parse(readFileSync(join(from, '_definitions.json'), 'utf8')).$defs;

/** Every "$ref" of a schema, rewritten from the shared file to the document's own $defs; the names it reaches. */
function rewrite(node, reached) {
  if (Array.isArray(node)) return node.map((n) => rewrite(n, reached));
  if (node === null || typeof node !== 'object') return node;
  const out = {};
  for (const [key, value] of Object.entries(node)) {
    if (key === '$ref' && typeof value === 'string') {
      const local = value.startsWith(SHARED) ? `#${value.slice(SHARED.length)}` : value;
      const name = /^#\/\$defs\/(.+)$/.exec(local)?.[1];
      if (name) reached.add(name);
      out[key] = local;
    } else {
      out[key] = rewrite(value, reached);
    }
  }
  return out;
}

mkdirSync(to, { recursive: true });
let count = 0;
for (const file of readdirSync(from)) {
  if (!file.endsWith('.json') || file === '_definitions.json' || file === 'all.json') continue;
  const reached = new Set();
  const schema = rewrite(JSON.parse(readFileSync(join(from, file), 'utf8')), reached);
  delete schema.$id;
  const defs = {};
  const pending = [...reached];
  while (pending.length > 0) {
    const name = pending.pop();
    if (name in defs) continue;
    if (!(name in definitions)) throw new Error(`${file}: no definition ${name}`);
    const more = new Set();
    defs[name] = rewrite(definitions[name], more);
    for (const m of more) if (!(m in defs)) pending.push(m);
  }
  if (Object.keys(defs).length > 0) schema.$defs = defs;
  writeFileSync(join(to, file), JSON.stringify(schema));
  count++;
}
console.error(`kubernetes-schemas: ${count} standalone schemas in ${to}`);
