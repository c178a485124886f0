import type { temporal } from '@temporalio/proto';

export interface HistoryPayload {
  /** Where it is: `events[3].workflowExecutionStartedEventAttributes.input.payloads[0]`. */
  path: string;
  encoding: string;
  /** The data as text, for a `json/plain` payload only. */
  plain?: string;
}

/**
 * Every payload in a history (inputs, results, update and query arguments, failures, summaries) with its
 * `encoding`, but search attributes, which codecs never encode (they stay readable and searchable on the server).
 */
export function historyPayloads(history: temporal.api.history.v1.IHistory): HistoryPayload[] {
  const found: HistoryPayload[] = [];
  const visit = (value: unknown, path: string, key: string): void => {
    if (value === null || typeof value !== 'object' || key === 'searchAttributes') return;
    if (ArrayBuffer.isView(value)) return;
    if (Array.isArray(value)) {
      value.forEach((v, i) => visit(v, `${path}[${i}]`, key));
      return;
    }
    const record = value as Record<string, unknown>;
    const metadata = record.metadata as Record<string, Uint8Array> | undefined;
    if (metadata && typeof metadata === 'object' && 'data' in record && metadata.encoding) {
      const encoding = Buffer.from(metadata.encoding).toString('utf8');
      const data = record.data as Uint8Array | null | undefined;
      found.push({
        path,
        encoding,
        ...(encoding === 'json/plain' && data ? { plain: Buffer.from(data).toString('utf8') } : {}),
      });
      return;
    }
    for (const [k, v] of Object.entries(record)) visit(v, `${path}.${k}`, k);
  };
  visit(history.events ?? [], 'events', 'events');
  return found;
}
