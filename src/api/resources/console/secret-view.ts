import { html, type Html } from './html';
import { when } from './views';
import type { SigningSecretView } from '../callback-signing-secret/handlers';

/** The grace periods the console offers for a rotation (the API takes any within its bounds). */
export const CONSOLE_ROTATION_GRACE_CHOICES = [
  { value: '24h', label: '24 hours (default)' },
  { value: '1h', label: '1 hour' },
  { value: '7d', label: '7 days' },
  { value: '0s', label: 'None: the current secret stops signing at once (it leaked)' },
] as const;

/**
 * The merchant's callback signing secret page (GET /console/callback-secret): the secrets that sign now, newest first,
 * and the rotation form when the secret is derived for the merchant (src/api/resources/callback-signing-secret/routes.ts).
 */
export function callbackSecretPage(view: SigningSecretView, csrfToken: string): Html {
  return html`<h1>Callback signing secret</h1>
    <p>
      Callbacks to you are signed with
      <a href="https://www.standardwebhooks.com">Standard Webhooks</a>: verify each one with your secret on the raw
      body. Every secret below signs each callback (one signature each), so either verifies during a grace period.
    </p>
    ${
      view.secrets.length === 0
        ? html`<p id="no-secret" class="error">No signing secret is configured for you: no callback is sent.</p>`
        : html`<table id="signing-secrets">
            <caption>
              Secrets that sign now, newest first
            </caption>
            <thead>
              <tr>
                <th scope="col">Generation</th>
                <th scope="col">Secret</th>
                <th scope="col">Created</th>
                <th scope="col">Signs until</th>
              </tr>
            </thead>
            <tbody>
              ${view.secrets.map(
                (s) =>
                  html`<tr>
                    <th scope="row">${s.generation ?? '—'}</th>
                    <td>
                      <details>
                        <summary>Show</summary>
                        <code class="secret">${s.secret}</code>
                      </details>
                    </td>
                    <td>${s.createdAt ? when(s.createdAt) : '—'}</td>
                    <td>${s.retiresAt ? when(s.retiresAt) : 'the next rotation'}</td>
                  </tr>`,
              )}
            </tbody>
          </table>`
    }
    ${
      view.rotatable
        ? html`<h2>Rotate</h2>
            <p>
              A new secret signs at once; the current one goes on signing for the grace period, while your receiver
              moves to the new one. Rotating again within a grace period ends the oldest secret at once.
            </p>
            <form method="post" action="/console/callback-secret/rotate" class="stack">
              <input type="hidden" name="csrf" value="${csrfToken}" />
              <label for="gracePeriod">The current secret goes on signing for</label>
              <select id="gracePeriod" name="gracePeriod">
                ${CONSOLE_ROTATION_GRACE_CHOICES.map((c) => html`<option value="${c.value}">${c.label}</option>`)}
              </select>
              <button type="submit">Rotate the secret</button>
            </form>`
        : view.secrets.length > 0
          ? html`<p id="operator-secret" class="hint">Your operator sets this secret: ask them to rotate it.</p>`
          : ''
    }`;
}
