import { randomUUID } from 'node:crypto';
import { isoAt } from './clock';
import type { Clock, WebhookDelivery, WebhookKind } from './types';

export function newDelivery(
  clock: Clock,
  kind: WebhookKind,
  url: string | null,
  body: Record<string, unknown>,
  trigger: string,
  copy = 1,
): WebhookDelivery {
  return {
    deliveryId: randomUUID(),
    kind,
    url,
    body,
    trigger,
    copy,
    createdAt: isoAt(clock()),
    outcome: 'pending',
    attempts: [],
  };
}

/** A positive integer number of copies from a fault setting (default 1). */
export const copiesOf = (duplicate: number | undefined): number => Math.max(1, Math.floor(duplicate ?? 1));
