/**
 * Server-rendered HTML for the console: every value goes through `html` (escaped), markup is built only from
 * literals. No inline script or style anywhere (the Content-Security-Policy allows neither).
 */

/** HTML as built here: a value of this type is never escaped again. */
export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

type Value = Html | string | number | boolean | null | undefined | readonly Value[];

function render(value: Value): string {
  if (value === null || value === undefined || value === false) return '';
  if (value instanceof Html) return value.text;
  if (Array.isArray(value)) return (value as readonly Value[]).map(render).join('');
  return escapeHtml(String(value));
}

/** A template tag: literals kept, interpolated values escaped (arrays joined, Html kept, null/false empty). */
export function html(strings: TemplateStringsArray, ...values: Value[]): Html {
  let out = strings[0]!;
  values.forEach((v, i) => (out += render(v) + strings[i + 1]!));
  return new Html(out);
}

/** The page around a body: landmarks (header, nav, main), the icon, the stylesheet and the live-update script. */
export function layout(options: { title: string; body: Html; merchantId?: string; csrfToken?: string }): string {
  const signedIn = options.merchantId !== undefined;
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>${options.title} · Merchant console</title>
        <link rel="icon" href="/console/assets/favicon.svg" type="image/svg+xml" />
        <link rel="stylesheet" href="/console/assets/console.css" />
        <script src="/console/assets/console.js" defer></script>
      </head>
      <body>
        <a class="skip" href="#main">Skip to content</a>
        <header>
          <p class="brand">Merchant console</p>
          ${
            signedIn
              ? html`<nav aria-label="Console">
                    <ul>
                      <li><a href="/console/applications">Applications</a></li>
                      <li><a href="/console/consents">Consent refreshes</a></li>
                      <li><a href="/console/callbacks">Undelivered callbacks</a></li>
                      <li><a href="/console/callback-secret">Callback secret</a></li>
                    </ul>
                  </nav>
                  <form method="post" action="/console/sign-out" class="sign-out">
                    <input type="hidden" name="csrf" value="${options.csrfToken}" />
                    <span>Signed in as <strong>${options.merchantId}</strong></span>
                    <button type="submit">Sign out</button>
                  </form>`
              : ''
          }
        </header>
        <main id="main" tabindex="-1">${options.body}</main>
      </body>
    </html> `.text;
}
