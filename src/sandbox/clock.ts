import type { AccountWebhookActivation, Clock } from './types';

const HOUR_MS = 3_600_000;

export const systemClock: Clock = () => Date.now();

export const isoAt = (ms: number): string => new Date(ms).toISOString();

/**
 * docs/bank-interface.md 6.2: "activation takes place at the start of the next full hour (enabled at hh:31, active from
 * the next hh:00)". Full hours are UTC hours. Enabled exactly at hh:00:00.000 still waits for the next hour:
 * "next" is read strictly.
 */
export function activationTime(enabledAt: number, activation: AccountWebhookActivation): number {
  if (activation === 'immediate') return enabledAt;
  return Math.floor(enabledAt / HOUR_MS) * HOUR_MS + HOUR_MS;
}
