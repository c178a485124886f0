import type { Client } from '@temporalio/client';
import type { PayloadCodec } from '@temporalio/common';
import type { History } from '@temporalio/common/lib/proto-utils';
import { temporal } from '@temporalio/proto';

/** One run of a workflow chain and the input it started with, as stored (encoded) and as decoded JSON. */
export interface RunInput {
  runId: string;
  /** Bytes of the run's start input as Temporal stores it (the limit is 2 MB per payload). */
  storedBytes: number;
  /** Bytes of the decoded input (the workflow's argument as JSON). */
  jsonBytes: number;
  /** The run continued as new (its input was carried by the next one). */
  continuedAsNew: boolean;
}

/**
 * Every run of a workflow id, newest first, walking back from the latest run through each started event's
 * `continuedExecutionRunId`: what each run started with. After continue-as-new that is the carried snapshot.
 */
export async function runInputs(
  client: Client,
  workflowId: string,
  codec: PayloadCodec,
  maxRuns = 1_000,
): Promise<RunInput[]> {
  const runs: RunInput[] = [];
  let runId: string | undefined = (await client.workflow.getHandle(workflowId).describe()).runId;
  while (runId && runs.length < maxRuns) {
    const history: History = await client.workflow.getHandle(workflowId, runId).fetchHistory();
    const events = history.events ?? [];
    const started = events[0]?.workflowExecutionStartedEventAttributes;
    const payloads = started?.input?.payloads ?? [];
    const stored = temporal.api.common.v1.Payloads.encode({ payloads }).finish().length;
    const decoded = await codec.decode(payloads);
    runs.push({
      runId,
      storedBytes: stored,
      jsonBytes: decoded.reduce((sum, p) => sum + (p.data?.length ?? 0), 0),
      continuedAsNew: events.some((e) => e.workflowExecutionContinuedAsNewEventAttributes),
    });
    runId = started?.continuedExecutionRunId || undefined;
  }
  return runs;
}
