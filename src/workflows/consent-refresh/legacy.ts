import { condition, setCurrentDetails } from '@temporalio/workflow';
import { refreshDetails } from './details';
import type { ConsentRefresh } from './refresh';

/**
 * The fan-in of runs recorded before LEARNED_BANKS_PATCH (patches.ts), kept so their histories replay: wake on
 * each new bank, the timeout, or the end of the quiet period; no learned banks, no restart after an outage.
 */
export async function legacyFanIn(refresh: ConsentRefresh): Promise<void> {
  const { quietPeriod } = refresh.settings;
  for (;;) {
    setCurrentDetails(refreshDetails(refresh.progress(), 'Waiting for banks'));
    if (refresh.allExpectedReported()) {
      refresh.endedBy = 'all-reported';
      return;
    }
    if (refresh.timedOut) {
      refresh.endedBy = 'timeout';
      return;
    }
    const reported = refresh.reportedCount;
    const woken = () => refresh.reportedCount !== reported || refresh.timedOut;
    if (quietPeriod !== undefined && reported > 0) {
      // The quiet period runs from the last new bank: a stale or duplicate event does not extend it.
      if (!(await condition(woken, quietPeriod))) {
        refresh.endedBy = 'quiet-period';
        return;
      }
    } else {
      await condition(woken);
    }
  }
}
