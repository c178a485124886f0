// Converts CustomResourceDefinitions (YAML) into the JSON schemas kubeconform reads, one file per kind and version,
// named as its -schema-location template expects: <group>/<kind, lower case>_<version>.json. Strict, as kubeconform's
// own -strict: an object that lists its properties accepts no other field unless the CRD preserves unknown fields.
// Descriptions are left out (the CRD has them), so the checked-in files stay small.
// Used to produce deploy/helm/schemas (deploy/helm/schemas/README.md says from which releases).
// Usage: node scripts/crd-schemas.mjs <output folder> <crd.yaml>... (each file may hold several documents)
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';

const [to, ...files] = process.argv.slice(2);
if (!to || files.length === 0) {
  console.error('usage: node scripts/crd-schemas.mjs <output folder> <crd.yaml>...');
  process.exit(2);
}

/** OpenAPI v3 (as Kubernetes writes it in a CRD) to JSON Schema. */
function convert(node) {
  if (Array.isArray(node)) return node.map(convert);
  if (node === null || typeof node !== 'object') return node;
  const out = {};
  for (const [key, value] of Object.entries(node)) {
    if (key === 'properties' || key === 'patternProperties' || key === 'definitions') {
      out[key] = Object.fromEntries(Object.entries(value).map(([k, v]) => [k, convert(v)]));
    } else if (key === 'description' || key === 'nullable' || key.startsWith('x-kubernetes-')) {
      continue;
    } else {
      out[key] = convert(value);
    }
  }
  if (node['x-kubernetes-int-or-string'] === true) {
    delete out.type;
    out.anyOf = out.anyOf ?? [{ type: 'integer' }, { type: 'string' }];
  }
  if (node.nullable === true && typeof out.type === 'string') out.type = [out.type, 'null'];
  const preserves = node['x-kubernetes-preserve-unknown-fields'] === true;
  if (out.properties && out.additionalProperties === undefined && !preserves) out.additionalProperties = false;
  return out;
}

let count = 0;
for (const file of files) {
  for (const document of parseAllDocuments(readFileSync(file, 'utf8'))) {
    const crd = document.toJS();
    if (crd?.kind !== 'CustomResourceDefinition') continue;
    const { group, names } = crd.spec;
    for (const version of crd.spec.versions) {
      const schema = convert(version.schema.openAPIV3Schema);
      schema.$schema = 'http://json-schema.org/draft-07/schema#';
      // kubeconform reads apiVersion and kind to pick the file: pin both, as the Kubernetes schemas do.
      schema.properties.apiVersion = { type: 'string', enum: [`${group}/${version.name}`] };
      schema.properties.kind = { type: 'string', enum: [names.kind] };
      mkdirSync(join(to, group), { recursive: true });
      const out = join(to, group, `${names.kind.toLowerCase()}_${version.name}.json`);
      writeFileSync(out, `${JSON.stringify(schema, null, 2)}\n`);
      count++;
    }
  }
}
console.error(`crd-schemas: ${count} schemas in ${to}`);
