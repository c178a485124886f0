import type { FinanceApplicationPage } from '../../../client/finance-applications';
import type {
  FinanceApplicationTimeline,
  CallbackDeliveryView,
  CallbackInFlight,
} from '../../../client/callback-deliveries';
import type { ConsentRefreshProgress } from '../../../shared/consent-refresh';
import { PHASE_LABELS, type ApplicationPhase } from '../../../shared/application-phase';
import { relativePhrase, utcText } from '../../../shared/time-words';
import { html, type Html } from './html';

/** How a status was learned (StatusChange.source), in words. */
const SOURCES: Record<string, string> = {
  create: "the bank's answer to the create",
  webhook: 'a webhook',
  poll: 'a poll',
};

/** The console's pages and the fragments the live-update script swaps in (assets.ts). */

/**
 * An instant: readable UTC in the page, the browser's local time once the script runs (`data-local`,
 * assets.ts), the exact ISO time on hover; and where it helps, a phrase relative to an anchor.
 */
export function when(iso: string, anchor?: { at: string | number; what?: string }): Html {
  const phrase = anchor ? relativePhrase(iso, anchor) : undefined;
  return html`<time datetime="${iso}" title="${iso}" data-local>${utcText(iso)}</time
    >${phrase ? html` <span class="relative">(${phrase})</span>` : ''}`;
}

/** The phase in the console's words: the same for the list and the page (src/shared/application-phase.ts). */
export function phaseText(phase: ApplicationPhase): Html {
  return html`<span class="phase" data-phase="${phase}">${PHASE_LABELS[phase]}</span>`;
}

export function signInPage(error?: string): Html {
  return html`<h1>Sign in</h1>
    <p>Sign in with your merchant API key. It is sent once, in this form, and never kept in the browser.</p>
    ${error ? html`<p class="error" role="alert" id="sign-in-error">${error}</p>` : ''}
    <form method="post" action="/console/sign-in" class="stack">
      <label for="key">Merchant API key</label>
      <input
        id="key"
        name="key"
        type="password"
        autocomplete="current-password"
        required
        ${error ? html`aria-describedby="sign-in-error" aria-invalid="true"` : ''}
      />
      <button type="submit">Sign in</button>
    </form>`;
}

export function applicationsPage(
  page: FinanceApplicationPage,
  filter: { reference?: string; status?: string; pageToken?: string },
): Html {
  const next = page.nextPageToken
    ? `/console/applications?${new URLSearchParams({
        ...(filter.reference ? { reference: filter.reference } : {}),
        ...(filter.status ? { status: filter.status } : {}),
        pageToken: page.nextPageToken,
      }).toString()}`
    : undefined;
  return html`<h1>Applications</h1>
    <form method="get" action="/console/applications" class="filters" role="search" aria-label="Find applications">
      <div>
        <label for="reference">Reference starts with</label>
        <input id="reference" name="reference" value="${filter.reference ?? ''}" autocomplete="off" />
      </div>
      <div>
        <label for="status">Status</label>
        <input id="status" name="status" value="${filter.status ?? ''}" list="statuses" autocomplete="off" />
        <datalist id="statuses">
          ${['CREATED', 'IN_PROGRESS', 'APPROVED', 'SIGNED', 'COMPLETED', 'DECLINED', 'CANCELLED', 'EXPIRED'].map((s) => html`<option value="${s}"></option>`)}
        </datalist>
      </div>
      <button type="submit">Search</button>
    </form>
    <p class="hint">Newest first. A new application or status shows in the list after a moment.</p>
    ${
      page.applications.length === 0
        ? html`<p id="no-applications">No applications match.</p>`
        : html`<table>
            <caption>
              Applications, newest first
            </caption>
            <thead>
              <tr>
                <th scope="col">Reference</th>
                <th scope="col">Status</th>
                <th scope="col">Created</th>
                <th scope="col">Followed</th>
              </tr>
            </thead>
            <tbody>
              ${page.applications.map(
                (a) =>
                  html`<tr>
                    <th scope="row">
                      <a href="/console/applications/${encodeURIComponent(a.merchantReference)}"
                        >${a.merchantReference}</a
                      >
                    </th>
                    <td><span class="status">${a.status ?? 'not created'}</span></td>
                    <td>${when(a.createdAt)}</td>
                    <td>${phaseText(a.phase)}</td>
                  </tr>`,
              )}
            </tbody>
          </table>`
    }
    ${next ? html`<p><a href="${next}">Older applications</a></p>` : ''}`;
}

export function applicationPage(
  ref: string,
  timeline: FinanceApplicationTimeline,
  csrfToken: string,
  now: number = Date.now(),
): Html {
  return html`<p><a href="/console/applications">← All applications</a></p>
    <h1>Application ${ref}</h1>
    <div
      id="timeline"
      data-live="/console/applications/${encodeURIComponent(ref)}/timeline"
      data-status="${timeline.state.status ?? ''}"
      data-done="${timeline.state.done ? 'true' : 'false'}"
    >
      ${timelineFragment(ref, timeline, csrfToken, now)}
    </div>
    <p id="live-note" class="hint" aria-live="polite"></p>`;
}

/** The part of the application page that updates live: summary, statuses, callbacks. */
export function timelineFragment(
  ref: string,
  t: FinanceApplicationTimeline,
  csrfToken: string,
  now: number = Date.now(),
): Html {
  const s = t.state;
  const created = s.history[0] ? { at: s.history[0].at, what: 'it was created' } : undefined;
  return html`<section aria-labelledby="summary-heading">
      <h2 id="summary-heading">Summary</h2>
      <dl class="summary">
        <dt>Status</dt>
        <dd>
          <span id="current-status" class="status" role="status" aria-live="polite">${s.status ?? 'not created'}</span>
        </dd>
        <dt>Bank's application id</dt>
        <dd>${s.financeApplicationId ?? '—'}</dd>
        <dt>Followed</dt>
        <dd id="phase">
          ${phaseText(t.phase)}${
            t.phase === 'following'
              ? html`, until ${when(s.deadlineAt, { at: now })}`
              : s.outcome && s.outcome !== 'terminal'
                ? html` (${s.outcome === 'deadline' ? 'its deadline passed' : s.outcome})`
                : ''
          }
        </dd>
        <dt>Webhooks received</dt>
        <dd>${s.webhooksReceived}</dd>
        <dt>Status reads</dt>
        <dd>${s.statusReads}</dd>
      </dl>
    </section>
    <section aria-labelledby="statuses-heading">
      <h2 id="statuses-heading">Statuses</h2>
      ${
        s.history.length === 0
          ? html`<p>No status yet.</p>`
          : html`<ol class="timeline" id="status-history">
              ${s.history.map(
                (h) =>
                  html`<li>
                    <span class="status">${h.status}</span> learned from
                    <strong>${SOURCES[h.source] ?? h.source}</strong> at
                    ${when(h.at, h === s.history[0] ? undefined : created)}
                  </li>`,
              )}
            </ol>`
      }
    </section>
    <section aria-labelledby="callbacks-heading">
      <h2 id="callbacks-heading">Callbacks to your endpoint</h2>
      ${t.inFlight ? inFlightText(t.inFlight, now) : ''}
      ${
        t.deliveries.length === 0
          ? html`<p>
              No callback delivered or given up
              yet${s.notificationsSent + s.notificationsFailed > 0 ? ' (earlier ones were not recorded)' : ''}.
            </p>`
          : html`<table id="callbacks">
              <caption>
                Callback deliveries, oldest first
              </caption>
              <thead>
                <tr>
                  <th scope="col">About</th>
                  <th scope="col">Outcome</th>
                  <th scope="col">HTTP status</th>
                  <th scope="col">Attempts</th>
                  <th scope="col">When</th>
                  <th scope="col">Send again</th>
                </tr>
              </thead>
              <tbody>
                ${t.deliveries.map((d) => deliveryRow(ref, d, csrfToken, created))}
              </tbody>
            </table>`
      }
    </section>`;
}

/**
 * The callback in flight: an attempt running now, or (between attempts) the one that failed and when the next is
 * scheduled: "Sending now" only while an attempt runs.
 */
function inFlightText(f: CallbackInFlight, now: number): Html {
  const failure = f.lastFailure
    ? html`failed${f.lastFailure.httpStatus !== undefined ? html` with HTTP ${f.lastFailure.httpStatus}` : ''}:
      ${f.lastFailure.message}`
    : 'failed';
  if (f.sending) {
    return html`<p id="callback-in-flight">
      Sending now: attempt ${f.attempt}${f.lastFailure ? html`; attempt ${f.attempt - 1} ${failure}` : ''}.
    </p>`;
  }
  return html`<p id="callback-in-flight">
    Retrying: attempt ${f.attempt - 1} ${failure}; attempt ${f.attempt}
    ${f.nextAttemptAt ? html`is scheduled at ${when(f.nextAttemptAt, { at: now })}` : 'is scheduled'}.
  </p>`;
}

function deliveryRow(
  ref: string,
  d: CallbackDeliveryView,
  csrfToken: string,
  created?: { at: string; what: string },
): Html {
  return html`<tr>
    <th scope="row">${d.about}</th>
    <td>${d.outcome}${d.outcome === 'failed' && d.message ? html`<br /><small>${d.message}</small>` : ''}</td>
    <td>${d.httpStatus ?? '—'}</td>
    <td>${d.attempts ?? '—'}</td>
    <td>${when(d.at, created)}</td>
    <td>${d.outcome === 'failed' ? resendCell(ref, d, csrfToken) : '—'}</td>
  </tr>`;
}

function resendCell(ref: string, d: CallbackDeliveryView, csrfToken: string): Html {
  const r = d.resend;
  const last =
    r === undefined
      ? ''
      : r.state === 'running'
        ? html`<p>Resending${r.attempt ? html` (attempt ${r.attempt})` : ''}…</p>`
        : r.state === 'completed'
          ? html`<p>
              Last resend: ${r.outcome}${r.httpStatus !== undefined ? html`, HTTP ${r.httpStatus}` : ''} at
              ${when(r.at)}
            </p>`
          : html`<p>Last resend: ${r.message}</p>`;
  return html`${last}
    <form method="post" action="/console/applications/${encodeURIComponent(ref)}/callbacks/resend">
      <input type="hidden" name="csrf" value="${csrfToken}" />
      <input type="hidden" name="key" value="${d.idempotencyKey}" />
      <button type="submit" aria-label="Send the ${d.about} callback again">Send again</button>
    </form>`;
}

export function consentsPage(consentId: string | undefined, progress: Html | undefined): Html {
  return html`<h1>Consent refreshes</h1>
    <form method="get" action="/console/consents" class="filters" role="search" aria-label="Find a consent's refresh">
      <div>
        <label for="consentId">Consent id</label>
        <input id="consentId" name="consentId" value="${consentId ?? ''}" required autocomplete="off" />
      </div>
      <button type="submit">Show refresh</button>
    </form>
    ${progress ?? ''}`;
}

export function refreshSection(consentId: string, progress: ConsentRefreshProgress, fingerprint: string): Html {
  return html`<div
      id="refresh"
      data-live="/console/consents/${encodeURIComponent(consentId)}/refresh"
      data-fingerprint="${fingerprint}"
      data-done="${progress.done ? 'true' : 'false'}"
    >
      ${refreshFragment(progress)}
    </div>
    <p id="live-note" class="hint" aria-live="polite"></p>`;
}

export function refreshFragment(p: ConsentRefreshProgress): Html {
  return html`<section aria-labelledby="refresh-heading">
    <h2 id="refresh-heading">Latest refresh of ${p.consentId}</h2>
    <p id="refresh-state" role="status" aria-live="polite">
      ${p.done ? html`Finished (${p.endedBy ?? p.error ?? 'done'})` : 'In progress'}${p.taskId ? html` · task ${p.taskId}` : ''}
    </p>
    <table>
      <caption>
        Banks
      </caption>
      <thead>
        <tr>
          <th scope="col">Bank</th>
          <th scope="col">Progress</th>
          <th scope="col">Accounts</th>
          <th scope="col">When</th>
        </tr>
      </thead>
      <tbody>
        ${p.banks.map(
          (b) =>
            html`<tr>
              <th scope="row">${b.bankName} (${b.bankCode})</th>
              <td>${b.taskStatus}${b.late ? ' (late)' : ''}</td>
              <td>${b.accounts.length}</td>
              <td>${when(b.at)}</td>
            </tr>`,
        )}
        ${p.missing.map(
          (code) =>
            html`<tr>
              <th scope="row">${code}</th>
              <td>waiting</td>
              <td>—</td>
              <td>—</td>
            </tr>`,
        )}
      </tbody>
    </table>
    ${p.banks.length + p.missing.length === 0 ? html`<p>No bank has reported yet.</p>` : ''}
  </section>`;
}

export function errorPage(
  message: string,
  back: { href: string; label: string } = { href: '/console/applications', label: 'Back to the applications' },
): Html {
  return html`<h1>${message}</h1>
    <p><a href="${back.href}">${back.label}</a></p>`;
}
