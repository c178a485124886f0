/**
 * The Temporal Web UI in headless Chromium, as `npm start` embeds it: a dev server of its own with the UI and its
 * codec endpoint (`--ui-codec-endpoint`, src/temporal/dev-server-process.ts) pointing at the codec gateway
 * (src/api/ui-codec-gateway.ts), the whole stack on that server, and one finance application. The run's page shows
 * its current details decoded (src/workflows/finance-application/details.ts); a screenshot is kept in
 * test-artifacts/web-ui-finance-application.png, and one of its timeline (timers named by their summaries) in
 * test-artifacts/web-ui-finance-application-timeline.png; docs/images/ holds copies of one run's.
 */
import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import type { Server } from 'node:http';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { chromium, type Browser } from 'playwright-core';
import { createMetrics } from '../../src/api/metrics';
import { boundPort, closeServer, listen } from '../../src/api/http-server';
import { uiCodecGatewayApp } from '../../src/api/ui-codec-gateway';
import { findTemporalCli } from '../../src/temporal/binaries';
import { devServerReady } from '../../src/temporal/dev-server';
import { spawnDevServer } from '../../src/temporal/dev-server-process';
import { freeLoopbackPort } from '../../src/temporal/free-port';
import { financeApplicationWorkflowId } from '../../src/shared/ids';
import { createLogger } from '../../src/telemetry/logging';
import { TEST_MERCHANT } from '../helpers/merchants';
import { startTestStack, type TestStack } from '../helpers/stack';
import { eventually, testPayloadCodec } from '../helpers/temporal';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const ARTIFACTS = join(__dirname, '..', '..', 'test-artifacts');

describe('Temporal Web UI in Chromium (embedded dev server, codec gateway)', () => {
  let dev: Awaited<ReturnType<typeof devServerReady>>;
  let gateway: Server;
  let stack: TestStack;
  let browser: Browser;

  beforeAll(async () => {
    const logger = createLogger({ level: 'warn' });
    const [port, uiPort] = [await freeLoopbackPort(), await freeLoopbackPort()];
    // The codec gateway first: the UI is given its address when the server starts.
    const origins = [`http://localhost:${uiPort}`, `http://127.0.0.1:${uiPort}`];
    const app = uiCodecGatewayApp({ codec: testPayloadCodec, corsOrigins: origins, metrics: createMetrics(), logger });
    gateway = await listen(app, 0, '127.0.0.1', 'TEMPORAL_UI_CODEC_PORT', app);
    dev = await devServerReady(
      spawnDevServer({
        cliPath: findTemporalCli()!,
        port,
        uiPort,
        dataDir: join(tmpdir(), `paylater-web-ui-${randomUUID()}`),
        cwd: process.cwd(),
        namespace: 'default',
        uiCodecEndpoint: `http://localhost:${boundPort(gateway)}/codec`,
      }),
      { namespace: 'default', logger },
    );
    // This file's stack runs on that server (jest gives each file its own process.env).
    process.env.TEMPORAL_TEST_ADDRESS = dev.address;
    [stack, browser] = await Promise.all([
      startTestStack(),
      chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] }),
    ]);
  });
  afterAll(async () => {
    await browser?.close();
    await stack?.close();
    await dev?.stop();
    if (gateway) await closeServer(gateway);
  });

  it("shows a finance application's run with its current details decoded, and keeps a screenshot", async () => {
    const ref = `web-ui-${randomUUID().slice(0, 8)}`;
    stack.sandbox.control.setApplicationScript(
      { steps: [{ status: 'IN_PROGRESS', afterMs: 500 }] },
      { merchantReference: ref },
    );
    const res = await stack.facade('/applications', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ merchantReference: ref, redirectUrl: 'https://shop.example/done' }),
    });
    expect(res.status).toBe(201);
    const workflowId = financeApplicationWorkflowId(TEST_MERCHANT, ref);
    const handle = stack.t.client.workflow.getHandle(workflowId);
    await eventually(async () => {
      const { currentDetails } = await handle.query<{ currentDetails?: string }>('__temporal_workflow_metadata');
      return currentDetails?.includes('**IN_PROGRESS**') ? true : undefined;
    });

    const context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
    const page = await context.newPage();
    page.setDefaultTimeout(60_000);
    await page.goto(`${dev.uiUrl}/namespaces/default/workflows/${encodeURIComponent(workflowId)}`);
    mkdirSync(ARTIFACTS, { recursive: true });
    try {
      // The timeline, its timers named by their summaries (decoded through the codec gateway, as every payload).
      await page.getByText('Deadline: stop following the application at', { exact: false }).first().waitFor();
      await page.screenshot({ path: join(ARTIFACTS, 'web-ui-finance-application-timeline.png') });
      // The current details are under User Metadata (UI 2.54): the details' words, not ciphertext.
      await page.getByText('User Metadata', { exact: true }).first().click();
      // The UI renders markdown in a sandboxed frame of its own: read every frame's text.
      const details = await eventually(async () => {
        for (const frame of page.frames()) {
          const text = await frame
            .evaluate(
              () => (globalThis as unknown as { document: { body?: { innerText: string } } }).document.body?.innerText,
            )
            .catch(() => undefined);
          if (text?.includes('Learned from a webhook')) return text;
        }
        return undefined;
      }, 60_000);
      expect(details).toMatch(/IN_PROGRESS.*Next poll about .* \(every 30 s now/s);
    } finally {
      await page.screenshot({ path: join(ARTIFACTS, 'web-ui-finance-application.png') });
      await context.close();
    }
  });
});
