/**
 * The console's static files, served from /console/assets/ (files of their own: the Content-Security-Policy
 * allows no inline script or style; the icon loads under `img-src 'self'`). The script keeps a page live through the long-poll: it asks for the page's
 * live fragment with the state it shows, the server answers when that changes (or after its wait), and the script
 * swaps the fragment in and announces a new status through an aria-live region. Without script the page still works.
 */

export const CONSOLE_SCRIPT = `'use strict';
(function () {
  // Times come as readable UTC; the browser shows them in its own time zone (the exact time stays in the title).
  function localTimes(root) {
    root.querySelectorAll('time[data-local]').forEach(function (el) {
      var d = new Date(el.getAttribute('datetime'));
      if (!isNaN(d.getTime())) el.textContent = d.toLocaleString();
    });
  }
  localTimes(document);
  var box = document.querySelector('[data-live]');
  if (!box) return;
  var shown = null;
  var note = document.getElementById('live-note');
  var failures = 0;
  function say(text) { if (note) note.textContent = text; }
  function pause(ms) { return new Promise(function (r) { setTimeout(r, ms); }); }
  function statusText() {
    var el = document.getElementById('current-status') || document.getElementById('refresh-state');
    return el ? el.textContent : '';
  }
  async function once() {
    var url = new URL(box.getAttribute('data-live'), location.href);
    if (box.hasAttribute('data-status')) url.searchParams.set('waitFrom', box.getAttribute('data-status'));
    if (box.hasAttribute('data-fingerprint')) url.searchParams.set('since', box.getAttribute('data-fingerprint'));
    var res = await fetch(url, { credentials: 'same-origin', headers: { accept: 'text/html' }, cache: 'no-store' });
    if (res.status === 401) { say('Your session ended: sign in again to see updates.'); return false; }
    if (!res.ok) {
      var failed = new Error('HTTP ' + res.status);
      failed.retryAfterMs = 1000 * (Number(res.headers.get('retry-after')) || 0);
      throw failed;
    }
    var text = await res.text();
    var before = statusText();
    // Compared with the last fragment received, not the page (its times are local now).
    if (shown === null ? box.innerHTML.trim() !== text.trim() : shown !== text.trim()) {
      box.innerHTML = text;
      localTimes(box);
    }
    shown = text.trim();
    var status = res.headers.get('x-console-status');
    if (status !== null) box.setAttribute('data-status', status);
    var fingerprint = res.headers.get('x-console-fingerprint');
    if (fingerprint !== null) box.setAttribute('data-fingerprint', fingerprint);
    box.setAttribute('data-done', res.headers.get('x-console-done') || 'false');
    var after = statusText();
    if (after !== before) say('Updated: ' + after);
    return res.headers.get('x-console-done') !== 'true';
  }
  async function loop() {
    for (;;) {
      try {
        if (!(await once())) return;
        failures = 0;
      } catch (err) {
        failures += 1;
        say('Live updates paused; retrying.');
        // A budget's 429 says when to come back (Retry-After); never sooner than the back-off.
        await pause(Math.max(err.retryAfterMs || 0, Math.min(30000, 1000 * Math.pow(2, failures))));
      }
    }
  }
  loop();
})();
`;

export const CONSOLE_STYLES = `:root { color-scheme: light; font-family: system-ui, sans-serif; line-height: 1.5; }
body { margin: 0; color: #1b1b1b; background: #fafafa; }
header { display: flex; flex-wrap: wrap; gap: 1rem; align-items: center; padding: .5rem 1.5rem; background: #0b3d5c; color: #fff; }
header a { color: #fff; }
.brand { font-weight: 700; margin: 0; }
nav ul { list-style: none; display: flex; gap: 1rem; margin: 0; padding: 0; }
.sign-out { margin-left: auto; display: flex; gap: .5rem; align-items: center; }
main { padding: 1rem 1.5rem; max-width: 72rem; }
.skip { position: absolute; left: -999px; }
.skip:focus { left: 1rem; top: 1rem; background: #fff; color: #000; padding: .5rem; z-index: 1; }
a:focus, button:focus, input:focus, select:focus, summary:focus { outline: 3px solid #f5a623; outline-offset: 2px; }
.stack { display: flex; flex-direction: column; gap: .5rem; max-width: 24rem; }
.filters { display: flex; flex-wrap: wrap; gap: 1rem; align-items: flex-end; }
.filters div { display: flex; flex-direction: column; }
input { font: inherit; padding: .3rem .5rem; border: 1px solid #666; border-radius: 3px; }
button { font: inherit; padding: .3rem .9rem; border: 1px solid #0b3d5c; background: #0b3d5c; color: #fff; border-radius: 3px; cursor: pointer; }
table { border-collapse: collapse; margin: 1rem 0; width: 100%; }
caption { text-align: left; font-weight: 600; }
th, td { text-align: left; padding: .35rem .6rem; border-bottom: 1px solid #ccc; vertical-align: top; }
.status { font-family: ui-monospace, monospace; font-weight: 600; }
.error { color: #a40000; font-weight: 600; }
.hint { color: #555; }
.summary { display: grid; grid-template-columns: max-content 1fr; gap: .25rem 1rem; }
.summary dd { margin: 0; }
.timeline li { margin: .25rem 0; }
td form { display: inline; }
select { font: inherit; padding: .3rem .5rem; }
code.secret { font-family: ui-monospace, monospace; word-break: break-all; }
`;

/**
 * The console's icon (served at /console/assets/favicon.svg, linked from every page, and at /console/favicon.ico for
 * a browser that asks there anyway): the header's colour with a white "P". No script, no external reference.
 */
export const CONSOLE_FAVICON = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16">
<rect width="16" height="16" rx="3" fill="#0b3d5c"/>
<path d="M5.5 13V3.5h3a2.75 2.75 0 0 1 0 5.5h-3" fill="none" stroke="#fff" stroke-width="2"/>
</svg>
`;
