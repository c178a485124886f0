import type { FinanceApplicationSettings } from './finance-application';

/**
 * What makes two creation requests of one merchant reference "the same" (docs/decisions/0038-reference-reuse-conflict.md):
 * the bank's create request (every field, merchantReference aside, compared as JSON: key order and absent-versus-
 * undefined do not count), the callback URL, and the settings the later request names. Not compared: the settings
 * it leaves to the operator's defaults (those may change between the two requests), the request id, the merchant
 * (part of the workflow id already), and what the workflow carries over on continue-as-new.
 */
export interface CreationRequest {
  /** The bank's create request as the workflow got it (merchantReference included). */
  application: Record<string, unknown>;
  callbackUrl?: string;
  settings?: FinanceApplicationSettings;
}

/** JSON with object keys sorted, at every depth: equal values give equal text. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v !== null && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(
          Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
        )
      : v,
  );
}

const same = (a: unknown, b: unknown): boolean => canonicalJson(a ?? null) === canonicalJson(b ?? null);

/**
 * The fields in which `asked` differs from the `stored` creation (the running workflow's start input), in the typed
 * client's names (`application.redirectUrl`, `callbackUrl`, `settings.deadlineMs`); empty: the same request.
 * `settingsNamed`: the settings the asked request set itself (only those are compared).
 */
export function creationDifferences(
  stored: CreationRequest,
  asked: CreationRequest,
  settingsNamed: readonly (keyof FinanceApplicationSettings)[],
): string[] {
  const differences: string[] = [];
  const keys = new Set([...Object.keys(stored.application), ...Object.keys(asked.application)]);
  keys.delete('merchantReference'); // the workflow id's already
  for (const key of [...keys].sort()) {
    if (!same(stored.application[key], asked.application[key])) differences.push(`application.${key}`);
  }
  if ((stored.callbackUrl ?? null) !== (asked.callbackUrl ?? null)) differences.push('callbackUrl');
  for (const key of settingsNamed) {
    if (!same(stored.settings?.[key], asked.settings?.[key])) differences.push(`settings.${key}`);
  }
  return differences;
}
