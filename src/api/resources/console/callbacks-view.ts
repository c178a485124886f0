import type { BulkResendProgress } from '../../../shared/undelivered-callbacks';
import { html, type Html } from './html';

/** A page of undelivered callbacks as GET /callbacks/undelivered answers it (src/api/resources/undelivered-callbacks/routes.ts). */
export interface UndeliveredView {
  callbacks: {
    idempotencyKey: string;
    type: string;
    state: string;
    firstAttemptAt: string;
    updatedAt: string;
    attempts?: number;
    httpStatus?: number;
    message?: string;
    merchantReference?: string;
  }[];
  nextPageToken: string | null;
  dropped: number;
}

export interface CallbacksFilter {
  /** As typed in the form (UTC, `YYYY-MM-DDTHH:MM`, or RFC 3339). */
  since?: string;
  until?: string;
  type?: string;
}

const query = (f: CallbacksFilter, extra: Record<string, string> = {}) =>
  new URLSearchParams(
    Object.entries({ ...f, ...extra }).filter((e): e is [string, string] => typeof e[1] === 'string' && e[1] !== ''),
  ).toString();

/**
 * The merchant's undelivered callbacks (docs/console.md): filters, the list (still retrying, or given up), and the
 * bulk resend of the filtered range with its progress.
 */
export function callbacksPage(
  filter: CallbacksFilter,
  list: UndeliveredView,
  resend: BulkResendProgress | undefined,
  csrfToken: string,
): Html {
  const ranged = filter.since !== undefined && filter.until !== undefined;
  return html`<h1>Undelivered callbacks</h1>
    <p class="hint">
      Callbacks your endpoint has not taken: still retrying, or given up once your retry window passed. Times are UTC.
    </p>
    <form
      method="get"
      action="/console/callbacks"
      class="filters"
      role="search"
      aria-label="Filter undelivered callbacks"
    >
      <div>
        <label for="since">First sent from</label>
        <input id="since" name="since" type="datetime-local" value="${filter.since ?? ''}" />
      </div>
      <div>
        <label for="until">until</label>
        <input id="until" name="until" type="datetime-local" value="${filter.until ?? ''}" />
      </div>
      <div>
        <label for="type">Event type</label>
        <input id="type" name="type" value="${filter.type ?? ''}" autocomplete="off" />
      </div>
      <button type="submit">Filter</button>
    </form>
    ${
      ranged
        ? html`<form method="post" action="/console/callbacks/resend" class="resend">
            <input type="hidden" name="csrf" value="${csrfToken}" />
            <input type="hidden" name="since" value="${filter.since}" />
            <input type="hidden" name="until" value="${filter.until}" />
            <input type="hidden" name="type" value="${filter.type ?? ''}" />
            <button type="submit">Send the given-up callbacks of this range again</button>
          </form>`
        : html`<p class="hint">Choose a range (from and until) to send its given-up callbacks again.</p>`
    }
    ${resend ? resendSection(resend) : ''}
    <table id="undelivered">
      <caption>
        Undelivered callbacks${list.dropped > 0 ? html` (${list.dropped} older ones no longer listed)` : ''}
      </caption>
      <thead>
        <tr>
          <th scope="col">First sent</th>
          <th scope="col">Event</th>
          <th scope="col">Application</th>
          <th scope="col">State</th>
          <th scope="col">Last answer</th>
          <th scope="col">webhook-id</th>
        </tr>
      </thead>
      <tbody>
        ${
          list.callbacks.length === 0
            ? html`<tr>
                <td colspan="6">None</td>
              </tr>`
            : list.callbacks.map(
                (c) =>
                  html`<tr>
                    <td>${c.firstAttemptAt}</td>
                    <td>${c.type}</td>
                    <td>
                      ${
                        c.merchantReference
                          ? html`<a href="/console/applications/${encodeURIComponent(c.merchantReference)}"
                              >${c.merchantReference}</a
                            >`
                          : '—'
                      }
                    </td>
                    <td>${c.state === 'given-up' ? 'Given up' : 'Retrying'}</td>
                    <td>${c.httpStatus ? `HTTP ${c.httpStatus}` : (c.message ?? '—')}</td>
                    <td><code>${c.idempotencyKey}</code></td>
                  </tr>`,
              )
        }
      </tbody>
    </table>
    ${
      list.nextPageToken
        ? html`<p><a href="/console/callbacks?${query(filter, { pageToken: list.nextPageToken })}">Next page</a></p>`
        : ''
    }`;
}

function resendSection(p: BulkResendProgress): Html {
  return html`<section aria-labelledby="resend-heading">
    <h2 id="resend-heading">Bulk resend of this range</h2>
    <p id="resend-state" role="status">
      ${p.done ? 'Finished' : 'In progress'}: ${p.delivered} delivered, ${p.failed} failed of ${p.found} found
      ${p.skippedRetrying > 0 ? html` · ${p.skippedRetrying} still retrying on their own (not sent)` : ''}
    </p>
    ${
      p.failures.length > 0
        ? html`<ul>
            ${p.failures.map((f) => html`<li><code>${f.idempotencyKey}</code>: ${f.message}</li>`)}
          </ul>`
        : ''
    }
  </section>`;
}
