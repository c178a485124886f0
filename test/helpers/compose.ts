import { readFileSync } from 'node:fs';
import { parse } from 'yaml';

/**
 * Renders a compose file as `docker compose config` would, for the parts this project uses (there is no Docker engine
 * nor compose plugin on these machines): YAML anchors, aliases and merge keys (`<<`), then interpolation of every
 * value: `$$`, `$VAR`, `${VAR}`, `${VAR:-default}`, `${VAR-default}`, `${VAR:?message}`, `${VAR?message}`,
 * `${VAR:+replacement}`, `${VAR+replacement}`. Top-level `x-*` extension fields are dropped, as compose drops them.
 */
export interface ComposeService {
  image?: string;
  build?: string | { context: string };
  command?: string[] | string;
  entrypoint?: string[] | string;
  environment?: Record<string, string>;
  ports?: (string | ComposePortObject)[];
  expose?: string[];
  networks?: string[] | Record<string, unknown>;
  network_mode?: string;
  depends_on?: Record<string, { condition?: string }> | string[];
  volumes?: string[];
  restart?: string;
  healthcheck?: { test: string[] | string };
  deploy?: { replicas?: number };
  /** Secrets granted to the service (short syntax: the top-level secret's name, at /run/secrets/<name>). */
  secrets?: string[];
}

/** The long syntax of a `ports:` entry. */
export interface ComposePortObject {
  target: number | string;
  published?: number | string;
  host_ip?: string;
  protocol?: string;
}

export interface ComposeFile {
  name?: string;
  services: Record<string, ComposeService>;
  volumes?: Record<string, unknown>;
  /** Top-level secrets: each from a file or from a variable of the host's environment. */
  secrets?: Record<string, { file?: string; environment?: string }>;
}

export class ComposeInterpolationError extends Error {
  override name = 'ComposeInterpolationError';
}

export interface RenderResult {
  compose: ComposeFile;
  /** Variables the file requires (`${VAR:?…}` / `${VAR?…}`). */
  required: Set<string>;
}

const PATTERN =
  /\$(?:(\$)|([A-Za-z_][A-Za-z0-9_]*)|\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?+])((?:[^{}]|\{[^{}]*\})*))?\})/g;

/** Interpolates one string value as compose does. */
export function interpolate(
  value: string,
  env: Record<string, string | undefined>,
  seen: { required: Set<string> } = { required: new Set() },
): string {
  return value.replace(
    PATTERN,
    (_m, dollar?: string, bare?: string, name?: string, op?: string, arg?: string): string => {
      if (dollar) return '$';
      const variable = (bare ?? name)!;
      const found = env[variable];
      const set = found !== undefined;
      const raw = found ?? '';
      const nonEmpty = raw !== '';
      const nested = (text: string | undefined) => interpolate(text ?? '', env, seen);
      switch (op) {
        case undefined:
          return raw;
        case ':-':
          return nonEmpty ? raw : nested(arg);
        case '-':
          return set ? raw : nested(arg);
        case ':?':
        case '?':
          seen.required.add(variable);
          if (op === ':?' ? nonEmpty : set) return raw;
          throw new ComposeInterpolationError(`required variable ${variable} is missing a value: ${nested(arg)}`);
        case ':+':
          return nonEmpty ? nested(arg) : '';
        case '+':
          return set ? nested(arg) : '';
        default:
          throw new ComposeInterpolationError(`unsupported interpolation in ${value}`);
      }
    },
  );
}

function walk(
  node: unknown,
  env: Record<string, string | undefined>,
  seen: Parameters<typeof interpolate>[2],
): unknown {
  if (typeof node === 'string') return interpolate(node, env, seen);
  if (Array.isArray(node)) return node.map((n) => walk(n, env, seen));
  if (node && typeof node === 'object')
    return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, walk(v, env, seen)]));
  // Compose reads numbers and booleans in environment maps as strings; keep them as YAML gave them elsewhere.
  return node;
}

/** Parses and renders a compose file against `env` (the host's environment and .env, as compose reads them). */
export function renderCompose(path: string, env: Record<string, string | undefined>): RenderResult {
  const doc = parse(readFileSync(path, 'utf8'), { merge: true }) as Record<string, unknown>;
  for (const key of Object.keys(doc)) if (key.startsWith('x-')) delete doc[key];
  const seen = { required: new Set<string>() };
  const compose = walk(doc, env, seen) as ComposeFile;
  for (const service of Object.values(compose.services)) {
    if (service.environment)
      service.environment = Object.fromEntries(
        Object.entries(service.environment).map(([k, v]) => [k, v === null ? '' : String(v)]),
      );
  }
  return { compose, ...seen };
}

/** One port a service publishes on the host: `hostIp` undefined means every interface (compose's default). */
export interface Publication {
  service: string;
  hostIp?: string;
  hostPort?: string;
  containerPort: string;
}

/**
 * The host ports each service publishes, from either syntax of `ports:`: `[HOST_IP:][HOST_PORT:]CONTAINER_PORT[/PROTO]`
 * (an IPv6 host address in brackets) or `{ target, published, host_ip }`.
 */
export function publications(services: Record<string, ComposeService>): Publication[] {
  const found: Publication[] = [];
  for (const [service, s] of Object.entries(services))
    for (const entry of s.ports ?? []) {
      if (typeof entry === 'object') {
        found.push({
          service,
          hostIp: entry.host_ip || undefined,
          hostPort: entry.published === undefined ? undefined : String(entry.published),
          containerPort: String(entry.target),
        });
        continue;
      }
      const m = /^(?:(\[[^\]]+\]|[^:]*):)??(?:([^:]*):)?([^:/]+)(?:\/\w+)?$/.exec(String(entry));
      if (!m) throw new Error(`unreadable ports entry ${JSON.stringify(entry)} of ${service}`);
      found.push({ service, hostIp: m[1] || undefined, hostPort: m[2] || undefined, containerPort: m[3]! });
    }
  return found;
}

/** Loopback host addresses: a port published there is reachable from the host itself only. */
export const LOOPBACK = ['127.0.0.1', '::1', '[::1]'];
