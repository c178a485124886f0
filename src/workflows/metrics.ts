import { metricMeter } from '@temporalio/workflow';
import { WorkflowMetric } from '../shared/metric-names';

/**
 * Workflow-side business metrics. `metricMeter` is replay-safe (nothing is emitted while replaying) and issues no
 * command, so adding or moving a call here needs no patch. The worker's Runtime exports them with the SDK's
 * series (the SDK adds `namespace`, `taskQueue` and `workflowType` labels, exported as `namespace`, `task_queue`
 * and `workflow_type`: src/worker/metrics.ts snakeCaseLabelNames). Metrics are created per call: the
 * meter caches them.
 */
export const workflowMetrics = {
  applicationStarted(): void {
    metricMeter
      .createCounter(WorkflowMetric.applicationsStarted, '{application}', 'Finance applications created at the bank')
      .add(1);
  },
  applicationFinished(outcome: string, status: string): void {
    metricMeter
      .createCounter(
        WorkflowMetric.applicationsFinished,
        '{application}',
        'Finance applications ended, by outcome and final status',
      )
      .add(1, { outcome, status });
  },
  statusChanged(source: string): void {
    metricMeter
      .createCounter(WorkflowMetric.statusChanges, '{change}', 'Finance application status changes recorded, by source')
      .add(1, { source });
  },
  unannouncedChange(webhooksLive: boolean): void {
    metricMeter
      .createCounter(
        WorkflowMetric.unannouncedChanges,
        '{change}',
        'Status changes found by polling that no webhook announced (the bank webhooks may be broken)',
      )
      .add(1, { webhooks_live: String(webhooksLive) });
  },
  unknownAtBank(): void {
    metricMeter
      .createCounter(
        WorkflowMetric.unknownAtBank,
        '{application}',
        'Applications the bank no longer knows (404 on the status read of an application it created)',
      )
      .add(1);
  },
  webhookDelay(seconds: number): void {
    metricMeter
      .createHistogram(
        WorkflowMetric.webhookDelay,
        'float',
        's',
        'From a webhook reaching the workflow to the status change it announced being recorded',
      )
      .record(Math.max(0, seconds));
  },
  refreshFinished(endedBy: string, missingBanks: number): void {
    metricMeter
      .createCounter(WorkflowMetric.refreshesFinished, '{refresh}', 'Consent refreshes ended, by what ended them')
      .add(1, { ended_by: endedBy });
    if (missingBanks > 0)
      metricMeter
        .createCounter(
          WorkflowMetric.refreshMissingBanks,
          '{bank}',
          'Expected banks that had not reported when a consent refresh ended',
        )
        .add(missingBanks);
  },
};
