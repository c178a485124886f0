import type { AccountEventBody } from '../../src/shared/bank-wire';
import type { ConsentRefreshProgress, LateBankReport } from '../../src/shared/consent-refresh';
import {
  learnedBankCodes,
  lateReportKey,
  mergeLateReports,
  toLateReport,
  trimLateReports,
} from '../../src/shared/late-reports';

const event = (bankCode: string, taskId = 'task-1', accounts = 1): AccountEventBody => ({
  consentId: 'c-1',
  taskId,
  taskStatus: 'FINISHED',
  bankCode,
  bankName: `${bankCode} Bank`,
  accounts: Array.from({ length: accounts }, (_, i) => ({ accountId: `${bankCode}-${i}`, eventType: 'UPDATED' })),
});
const report = (
  bankCode: string,
  taskId = 'task-1',
  delivery: LateBankReport['delivery'] = 'delivered',
  accounts = 1,
) =>
  toLateReport(event(bankCode, taskId, accounts), 'refresh-closed', `2030-01-01T00:00:0${bankCode.length}Z`, delivery);

const progress = (over: Partial<ConsentRefreshProgress> = {}): ConsentRefreshProgress => ({
  consentId: 'c-1',
  taskId: 'task-1',
  done: true,
  banks: [
    {
      bankCode: 'A',
      bankName: 'A Bank',
      taskStatus: 'FINISHED',
      succeeded: true,
      accounts: [{ accountId: 'A-0', eventType: 'ADDED' }],
      at: '2030-01-01T00:00:00Z',
    },
  ],
  missing: [],
  staleEvents: 0,
  duplicateEvents: 0,
  endedBy: 'quiet-period',
  ...over,
});

describe('late bank reports (plain decisions)', () => {
  it('turns an accountEvent into a report, keyed by (taskId, bankCode)', () => {
    const r = toLateReport({ ...event('B'), taskStatus: 'FAILED' }, 'other-task', '2030-01-01T00:00:00Z', 'pending');
    expect(r).toEqual({
      consentId: 'c-1',
      taskId: 'task-1',
      bankCode: 'B',
      bankName: 'B Bank',
      taskStatus: 'FAILED',
      succeeded: false,
      accounts: [{ accountId: 'B-0', eventType: 'UPDATED' }],
      at: '2030-01-01T00:00:00Z',
      reason: 'other-task',
      delivery: 'pending',
    });
    expect(lateReportKey('a:b', 'c')).not.toBe(lateReportKey('a', 'b:c'));
    expect(lateReportKey('t', 'B')).toBe(lateReportKey('t', 'B'));
  });

  describe('mergeLateReports', () => {
    it('adds the late banks of the same taskId, flagged late with their time, and takes them out of missing', () => {
      const merged = mergeLateReports(progress({ missing: ['B', 'C', 'D'] }), [
        report('B'),
        report('CC', 'task-0'), // an earlier refresh's: not this result's
        report('C'),
        report('B'), // kept twice in no case, but merged once anyway
      ]);
      expect(merged.banks.map((b) => [b.bankCode, b.late ?? false])).toEqual([
        ['A', false],
        ['B', true],
        ['C', true],
      ]);
      expect(merged.banks[1]).toMatchObject({ at: '2030-01-01T00:00:01Z', succeeded: true, bankName: 'B Bank' });
      expect(merged.missing).toEqual(['D']);
      expect(merged.lateReports).toBe(2);
      expect(merged.done).toBe(true);
    });

    it('keeps an on-time report over a late one of the same bank, and merges nothing without a taskId', () => {
      expect(mergeLateReports(progress(), [report('A')])).toMatchObject({ lateReports: 0, banks: [{ bankCode: 'A' }] });
      const notStarted = progress({ taskId: undefined, banks: [], error: 'PUT /refresh failed' });
      expect(mergeLateReports(notStarted, [report('B')])).toMatchObject({ lateReports: 0, banks: [] });
    });
  });

  describe('learnedBankCodes (the known set for the next refresh)', () => {
    it('is the banks that answered the latest refresh, on time or late', () => {
      expect(learnedBankCodes(progress(), [report('C'), report('B'), report('Z', 'task-0')])).toEqual(['A', 'B', 'C']);
    });

    it('forgets a learned bank that did not answer the latest refresh at all while others did', () => {
      expect(learnedBankCodes(progress({ knownBankCodes: ['A', 'GONE'], missing: ['GONE'] }), [])).toEqual(['A']);
    });

    it('carries the set the latest refresh was given when it saw no bank (PUT /refresh failed, or no answer)', () => {
      const nothing = progress({ banks: [], knownBankCodes: ['A', 'B'], endedBy: 'timeout', missing: ['A', 'B'] });
      expect(learnedBankCodes(nothing, [])).toEqual(['A', 'B']);
      const failed = progress({ taskId: undefined, banks: [], knownBankCodes: ['B'], endedBy: undefined });
      expect(learnedBankCodes(failed, [report('X', 'task-0')])).toEqual(['B']);
    });

    it('without a retained refresh, learns from every kept late report; with nothing, learns nothing', () => {
      expect(
        learnedBankCodes(undefined, [report('B', 'task-9'), report('A', 'task-8'), report('B', 'task-8')]),
      ).toEqual(['A', 'B']);
      expect(learnedBankCodes(undefined, [])).toEqual([]);
      expect(learnedBankCodes(progress({ banks: [] }), [])).toEqual([]);
    });
  });

  describe('trimLateReports', () => {
    it('drops the oldest delivered reports beyond the count limit, never a pending one', () => {
      const reports = [report('A', 't1', 'pending'), report('B', 't1'), report('C', 't1'), report('D', 't1')];
      expect(trimLateReports(reports, { maxReports: 2, maxAccounts: 100 }).map((r) => r.bankCode)).toEqual(['A', 'D']);
    });

    it('drops the oldest beyond the account limit', () => {
      const reports = [report('A', 't1', 'kept', 3), report('B', 't1', 'kept', 3), report('C', 't1', 'kept', 3)];
      expect(trimLateReports(reports, { maxReports: 10, maxAccounts: 6 }).map((r) => r.bankCode)).toEqual(['B', 'C']);
      expect(trimLateReports(reports).length).toBe(3);
    });
  });
});
