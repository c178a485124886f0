import {
  APPLICATION_PHASES,
  applicationPhase,
  isDone,
  listedPhaseFacts,
  PHASE_LABELS,
} from '../../src/shared/application-phase';

const TERMINAL = ['COMPLETED', 'DECLINED'];

describe('application phase (one vocabulary for the API, the console list and the page)', () => {
  it('is following while the run follows the status, notifying once it stops but the run is open, closed after', () => {
    expect(applicationPhase({ runOpen: true, followingEnded: false })).toBe('following');
    expect(applicationPhase({ runOpen: true, followingEnded: true })).toBe('notifying');
    expect(applicationPhase({ runOpen: false, followingEnded: true })).toBe('closed');
    // A run terminated by an operator while following: closed all the same.
    expect(applicationPhase({ runOpen: false, followingEnded: false })).toBe('closed');
    expect(APPLICATION_PHASES.map(isDone)).toEqual([false, true, true]);
    expect(Object.keys(PHASE_LABELS)).toEqual([...APPLICATION_PHASES]);
  });

  it('reads a listed application as its page does: a terminal status in an open run is notifying', () => {
    const listed = (runOpen: boolean, status: string | null) =>
      applicationPhase(listedPhaseFacts(runOpen, status, TERMINAL));
    expect(listed(true, 'COMPLETED')).toBe(applicationPhase({ runOpen: true, followingEnded: true }));
    expect(listed(true, 'IN_PROGRESS')).toBe('following');
    expect(listed(true, null)).toBe('following');
    expect(listed(false, 'IN_PROGRESS')).toBe('closed');
  });
});
