/**
 * Where a finance application stands, in one word the API (`phase` and `done` of GET /applications and
 * GET /applications/:ref), the console's list and the console's page all use (docs/merchant-api.md, "Phases").
 * Plain code: each reader gives the facts it has and gets the same answer (test/shared/application-phase.test.ts).
 *
 * - `following`: the workflow follows the application; its status may still change.
 * - `notifying`: the status will not change any more (a terminal status, the deadline, or a day of the bank's 404s),
 *   but the run is still open: it is sending the last callbacks to the merchant (retried until taken or given up).
 * - `closed`: the run has ended; nothing more happens unless the merchant sends a failed callback again.
 */
export const APPLICATION_PHASES = ['following', 'notifying', 'closed'] as const;
export type ApplicationPhase = (typeof APPLICATION_PHASES)[number];

/** What a reader knows of an application. */
export interface PhaseFacts {
  /** The workflow's run is still open (RUNNING). */
  runOpen: boolean;
  /** The workflow no longer follows the status (its state's `done`). */
  followingEnded: boolean;
}

export function applicationPhase({ runOpen, followingEnded }: PhaseFacts): ApplicationPhase {
  if (!runOpen) return 'closed';
  return followingEnded ? 'notifying' : 'following';
}

/** The API's `done`: no status change will come any more (the phase is past `following`). */
export const isDone = (phase: ApplicationPhase): boolean => phase !== 'following';

/** The words the console shows for each phase. */
export const PHASE_LABELS: Readonly<Record<ApplicationPhase, string>> = {
  following: 'following',
  notifying: 'final status; last callback still being sent',
  closed: 'closed',
};

/**
 * The facts of a listed application: a list reads visibility, which has the run's status and the
 * FinanceApplicationStatus search attribute but not the state, so a terminal status (the service's
 * BANK_TERMINAL_STATUSES) stands for "no longer followed". An open run that ended at its deadline still reads
 * `following` in a list until it closes (docs/merchant-api.md, "Phases").
 */
export function listedPhaseFacts(
  runOpen: boolean,
  status: string | null | undefined,
  terminalStatuses: readonly string[],
): PhaseFacts {
  return { runOpen, followingEnded: !runOpen || (status != null && terminalStatuses.includes(status)) };
}
