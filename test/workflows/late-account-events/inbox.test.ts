import type { AccountEventBody } from '../../../src/shared/bank-wire';
import {
  DEFAULT_LATE_REPORTS_DELIVERIES_PER_RUN,
  DEFAULT_LATE_REPORTS_IDLE_TIMEOUT,
  MAX_LATE_REPORT_KEYS_KEPT,
  MAX_LATE_REPORTS_KEPT,
} from '../../../src/shared/consent-refresh';
import {
  LateReportInbox,
  lateBankReportEvent,
  lateReportIdempotencyKey,
  lateReportsDetails,
  resolveLateReportsSettings,
} from '../../../src/workflows/late-account-events/inbox';
import { SNAPSHOT_SCHEMA_VERSIONS } from '../../../src/workflows/snapshots';

/** The late bank reports' keeping and delivery bookkeeping (plain code; the workflow passes workflow time in). */
describe('LateReportInbox', () => {
  const consentId = 'consent-1';
  const event = (taskId: string, bankCode: string): AccountEventBody => ({
    consentId,
    taskId,
    taskStatus: 'FINISHED',
    bankCode,
    bankName: `Bank ${bankCode}`,
    accounts: [{ accountId: `${bankCode}-1`, eventType: 'ADDED' }],
  });

  it('fills in the defaults, with at least one delivery per run', () => {
    expect(resolveLateReportsSettings({ merchantId: 'test', consentId })).toEqual({
      idleTimeout: DEFAULT_LATE_REPORTS_IDLE_TIMEOUT,
      maxDeliveriesPerRun: DEFAULT_LATE_REPORTS_DELIVERIES_PER_RUN,
    });
    expect(
      resolveLateReportsSettings({ merchantId: 'test', consentId, maxDeliveriesPerRun: -3 }).maxDeliveriesPerRun,
    ).toBe(1);
  });

  it('keeps each (taskId, bankCode) once, pending delivery, and counts the duplicates', () => {
    const inbox = new LateReportInbox(consentId, 'https://merchant.example/cb');
    expect(inbox.receive({ event: event('t1', 'A'), reason: 'refresh-closed' }, 1_000)).toBe('recorded');
    expect(inbox.receive({ event: event('t1', 'A'), reason: 'other-task' }, 2_000)).toBe('duplicate');
    expect(inbox.receive({ event: event('t2', 'A'), reason: 'other-task' }, 3_000)).toBe('recorded');
    const s = inbox.state();
    expect(s.received).toBe(3);
    expect(s.duplicates).toBe(1);
    expect(s.reports.map((r) => [r.taskId, r.reason, r.delivery, r.at])).toEqual([
      ['t1', 'refresh-closed', 'pending', new Date(1_000).toISOString()],
      ['t2', 'other-task', 'pending', new Date(3_000).toISOString()],
    ]);
    expect(inbox.nextPending()?.taskId).toBe('t1');
  });

  it('only keeps reports without a callback URL (nothing to deliver)', () => {
    const inbox = new LateReportInbox(consentId, undefined);
    inbox.receive({ event: event('t1', 'A'), reason: 'no-refresh' }, 0);
    expect(inbox.state().reports[0]!.delivery).toBe('kept');
    expect(inbox.nextPending()).toBeUndefined();
    expect(lateReportsDetails(inbox.state(), undefined)).toContain('no merchant callback configured: kept only');
  });

  it('delivers in order: a settled report is delivered or failed, stays queryable, and counts for the run', () => {
    const inbox = new LateReportInbox(consentId, 'https://merchant.example/cb');
    inbox.receive({ event: event('t1', 'A'), reason: 'refresh-closed' }, 0);
    inbox.receive({ event: event('t1', 'B'), reason: 'refresh-closed' }, 0);
    inbox.settled(inbox.nextPending()!, 'failed');
    inbox.settled(inbox.nextPending()!, 'delivered');
    expect(inbox.nextPending()).toBeUndefined();
    expect(inbox.deliveriesThisRun).toBe(2);
    expect(inbox.state().reports.map((r) => r.delivery)).toEqual(['failed', 'delivered']);
  });

  it('bounds the kept reports and the remembered keys, never dropping an undelivered report', () => {
    const inbox = new LateReportInbox(consentId, 'https://merchant.example/cb');
    for (let i = 0; i < MAX_LATE_REPORT_KEYS_KEPT + 1; i++)
      inbox.receive({ event: event(`t${i}`, 'A'), reason: 'other-task' }, 0);
    // All still pending: none may go.
    expect(inbox.keptCount).toBe(MAX_LATE_REPORT_KEYS_KEPT + 1);
    expect(inbox.snapshot().seenKeys).toHaveLength(MAX_LATE_REPORT_KEYS_KEPT);
    // The oldest key was forgotten: that report would be kept again.
    expect(inbox.receive({ event: event('t0', 'A'), reason: 'other-task' }, 0)).toBe('recorded');
    for (let r = inbox.nextPending(); r !== undefined; r = inbox.nextPending()) inbox.settled(r, 'delivered');
    expect(inbox.keptCount).toBe(MAX_LATE_REPORTS_KEPT);
  });

  it('carries its reports, keys and counters over continue-as-new', () => {
    const inbox = new LateReportInbox(consentId, 'https://merchant.example/cb');
    inbox.receive({ event: event('t1', 'A'), reason: 'refresh-closed' }, 0);
    inbox.receive({ event: event('t1', 'A'), reason: 'refresh-closed' }, 0);
    const snapshot = inbox.snapshot();
    expect(snapshot).toMatchObject({
      schemaVersion: SNAPSHOT_SCHEMA_VERSIONS.lateAccountEvents,
      received: 2,
      duplicates: 1,
    });
    const next = new LateReportInbox(consentId, 'https://merchant.example/cb', snapshot);
    expect(next.receive({ event: event('t1', 'A'), reason: 'refresh-closed' }, 0)).toBe('duplicate');
    expect(next.nextPending()?.bankCode).toBe('A');
    expect(next.deliveriesThisRun).toBe(0);
  });

  it("builds the merchant's event without our delivery state, and one key per report", () => {
    const inbox = new LateReportInbox(consentId, 'https://merchant.example/cb');
    inbox.receive({ event: event('t1', 'A'), reason: 'refresh-closed' }, 0);
    const report = inbox.nextPending()!;
    const { delivery: _delivery, ...rest } = report;
    expect(lateBankReportEvent(report)).toEqual({ type: 'consent.late-bank-report', ...rest });
    expect(lateReportIdempotencyKey('late-wf', report)).toBe('late-wf:t1:A');
  });
});
