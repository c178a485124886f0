/**
 * Checks real answers against the OpenAPI document (src/api/openapi/document.ts): the status must be one the
 * operation declares, the content type one of that answer's, and a JSON body must match its schema (ajv, JSON
 * Schema 2020-12, the dialect of OpenAPI 3.1).
 *
 * - `await expectMatchesOpenApi(res, 'GET', '/applications/{ref}')` after a fetch (the template may be left out:
 *   the response's URL is matched against the document's paths);
 * - `recordOpenApiAnswers(server)` checks every answer a listener sends, whoever asked (the test stack records both
 *   listeners: `stack.openApi.expectAllMatched()`).
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { createOpenApiDocument, type OpenApiDocument } from '../../src/api/openapi/document';

const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

interface Operation {
  responses: Record<string, { content?: Record<string, { schema?: unknown }> }>;
  'x-listener'?: string;
}

let document: OpenApiDocument | undefined;
/** The document under test (built once per test file). */
export function openApiDocument(): OpenApiDocument {
  document ??= createOpenApiDocument();
  return document;
}

/** `/applications/{ref}` → a matcher of concrete paths; literal segments must be equal, `{x}` any one segment. */
function matches(template: string, path: string): boolean {
  const t = template.split('/');
  const p = path.split('/');
  return (
    t.length === p.length && t.every((segment, i) => (/^\{[^}]+\}$/.test(segment) ? p[i] !== '' : segment === p[i]))
  );
}

/** The document's path template for a concrete path (or the template itself), literal paths first. */
export function pathTemplateOf(path: string): string | undefined {
  const templates = Object.keys(openApiDocument().paths ?? {});
  if (templates.includes(path)) return path;
  const candidates = templates.filter((t) => matches(t, path));
  // `/docs/init.js` before `/docs/{x}`: the fewest parameters win.
  candidates.sort((a, b) => (a.match(/\{/g)?.length ?? 0) - (b.match(/\{/g)?.length ?? 0));
  return candidates[0];
}

export function operationOf(method: string, template: string): Operation | undefined {
  const item = (openApiDocument().paths ?? {})[template] as Record<string, Operation> | undefined;
  return item?.[method.toLowerCase()];
}

let ajv: Ajv2020 | undefined;
const validators = new Map<string, ValidateFunction>();

/** A validator for one answer's schema, with the document's component schemas as `$defs`. */
function validatorFor(key: string, schema: unknown): ValidateFunction {
  let validate = validators.get(key);
  if (validate) return validate;
  if (!ajv) {
    ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false });
    addFormats(ajv);
  }
  const defs = openApiDocument().components?.schemas ?? {};
  const rebased = JSON.parse(
    JSON.stringify({ ...(schema as object), $defs: defs }).replaceAll('#/components/schemas/', '#/$defs/'),
  );
  validate = ajv.compile(rebased);
  validators.set(key, validate);
  return validate;
}

export interface Answer {
  method: string;
  /** A concrete path (query ignored) or a path template of the document. */
  path: string;
  status: number;
  contentType: string | undefined;
  /** The body as text ('' when none). */
  body: string;
}

/** What is wrong with an answer, as the document sees it (empty: it matches). */
export function answerProblems(answer: Answer, template = pathTemplateOf(answer.path.split('?')[0]!)): string[] {
  const what = `${answer.method.toUpperCase()} ${template ?? answer.path} → ${answer.status}`;
  if (template === undefined) return [`${what}: no path of the document matches ${answer.path}`];
  const operation = operationOf(answer.method, template);
  if (!operation) return [`${what}: the document has no ${answer.method.toUpperCase()} operation on ${template}`];
  const response = operation.responses[String(answer.status)] ?? operation.responses.default;
  if (!response) {
    return [`${what}: status not documented (documented: ${Object.keys(operation.responses).join(', ')})`];
  }
  const content = response.content ?? {};
  const types = Object.keys(content);
  if (types.length === 0) return answer.body === '' ? [] : [`${what}: a body where the document declares none`];
  const mediaType = (answer.contentType ?? '').split(';')[0]!.trim().toLowerCase();
  if (!types.includes(mediaType)) return [`${what}: content type "${mediaType}" not documented (${types.join(', ')})`];
  // JSON and its structured-syntax types (application/problem+json) are checked against their schema.
  if (mediaType !== 'application/json' && !mediaType.endsWith('+json')) return [];
  let body: unknown;
  try {
    body = JSON.parse(answer.body);
  } catch {
    return [`${what}: body is not JSON: ${answer.body.slice(0, 80)}`];
  }
  const validate = validatorFor(`${answer.method} ${template} ${answer.status}`, content[mediaType]!.schema ?? {});
  if (validate(body)) return [];
  return (validate.errors ?? []).map(
    (e) => `${what}: body${e.instancePath || ''} ${e.message ?? 'invalid'} ${JSON.stringify(e.params)}`,
  );
}

/**
 * Expects a fetch answer to match the document: `await expectMatchesOpenApi(res, 'GET', '/applications/{ref}')`.
 * Reads a clone of the body, so the caller can still read it. Returns the parsed JSON body (or the text).
 */
export async function expectMatchesOpenApi(res: Response, method: string, template?: string): Promise<unknown> {
  const body = await res.clone().text();
  const path = new URL(res.url).pathname;
  const problems = answerProblems(
    { method, path, status: res.status, contentType: res.headers.get('content-type') ?? undefined, body },
    template ?? pathTemplateOf(path),
  );
  failOn(problems);
  try {
    return JSON.parse(body);
  } catch {
    return body;
  }
}

export interface OpenApiRecorder {
  /** Answers checked so far (that had an operation in the document). */
  readonly checked: number;
  /** Problems found so far, one line each. */
  readonly problems: readonly string[];
  /** Fails the test if any answer so far disagreed with the document; then starts afresh. */
  expectAllMatched(): void;
}

/**
 * Checks every answer the servers send against the document, as it goes out (the body as written). Answers to
 * paths that are no route (the 404), to a method a described path does not have (the 405), CORS preflights, HEAD
 * requests and the console's pages are not operations: skipped.
 */
export function recordOpenApiAnswers(...servers: Server[]): OpenApiRecorder {
  let checked = 0;
  let problems: string[] = [];
  const onRequest = (req: IncomingMessage, res: ServerResponse) => {
    const method = req.method ?? 'GET';
    if (method === 'OPTIONS' || method === 'HEAD') return;
    // Read now: Express rewrites req.url under a mounted router. The console is pages, not API (docs/console.md).
    const path = (req.url ?? '/').split('?')[0]!;
    if (/^\/console(\/|$)/i.test(path)) return;
    const chunks: Buffer[] = [];
    const keep = (chunk: unknown, encoding?: unknown) => {
      if (chunk === undefined || chunk === null || typeof chunk === 'function') return;
      chunks.push(
        Buffer.isBuffer(chunk)
          ? chunk
          : Buffer.from(chunk as string, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8'),
      );
    };
    const write = res.write.bind(res) as (...args: unknown[]) => boolean;
    const end = res.end.bind(res) as (...args: unknown[]) => ServerResponse;
    res.write = ((...args: unknown[]) => {
      keep(args[0], args[1]);
      return write(...args);
    }) as typeof res.write;
    res.end = ((...args: unknown[]) => {
      keep(args[0], args[1]);
      return end(...args);
    }) as typeof res.end;
    res.once('finish', () => {
      const template = pathTemplateOf(path);
      if (template === undefined || !operationOf(method, template)) {
        // No route (the generic 404), or a described path asked with another method (405 with Allow): no operation.
        if (res.statusCode === 404 || res.statusCode === 405) return;
        problems.push(`${method} ${path} → ${res.statusCode}: answered, but no operation in the document`);
        return;
      }
      checked++;
      const contentType = res.getHeader('content-type');
      problems.push(
        ...answerProblems(
          {
            method,
            path,
            status: res.statusCode,
            contentType: contentType === undefined ? undefined : String(contentType),
            body: Buffer.concat(chunks).toString('utf8'),
          },
          template,
        ),
      );
    });
  };
  // Before the app's own listener: an answer sent synchronously is seen too.
  for (const server of servers) server.prependListener('request', onRequest);
  return {
    get checked() {
      return checked;
    },
    get problems() {
      return problems;
    },
    expectAllMatched() {
      const found = problems;
      problems = [];
      failOn(found);
    },
  };
}

/**
 * Throws, listing them, when there are problems: a plain Error rather than jest's `expect`, so this helper also
 * compiles and runs outside jest (the benches use the test stack).
 */
function failOn(problems: readonly unknown[]): void {
  if (problems.length > 0) {
    throw new Error(`Answers that disagree with the OpenAPI document:\n${JSON.stringify(problems, null, 2)}`);
  }
}

export { METHODS as OPENAPI_METHODS };
