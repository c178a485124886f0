/**
 * docs/walkthrough.md as a reader runs it: its ```sh blocks, in order, in one bash (variables carry from step to
 * step), against a real stack (the suite's Temporal server, a worker, the sandbox over HTTP, the facade). The test
 * sets only what the page asks the reader to set (API, BANK, KEY, SECRET, and a received callback's headers and
 * body), and checks each step's answers: status codes and the fields the page shows.
 */
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import type { Server } from 'node:http';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startTestStack, TEST_CALLBACK_SIGNING_SECRET, type TestStack } from '../helpers/stack';
import { eventually } from '../helpers/temporal';
import { codeBlocks } from '../helpers/markdown';
import { listen, boundPort, closeServer } from '../../src/api/http-server';

const PAGE = join(__dirname, '../../docs/walkthrough.md');
const KEY = 'walkthrough-merchant-api-key-0123456789abcdef';

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: unknown;
  text: string;
}

/** The HTTP answers `curl -si` printed, in order (curl writes a body without a final newline). */
function answers(output: string): Answer[] {
  return output
    .split(/(?=HTTP\/\d(?:\.\d)? \d{3}\b)/)
    .filter((chunk) => /^HTTP\//.test(chunk))
    .map((chunk) => {
      const [head = '', ...rest] = chunk.split(/\r?\n\r?\n/);
      const [statusLine = '', ...lines] = head.split(/\r?\n/);
      const headers: Record<string, string> = {};
      for (const line of lines) {
        const colon = line.indexOf(':');
        if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
      }
      const text = rest.join('\n\n').trim();
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        body = undefined;
      }
      return { status: Number(/ (\d{3})/.exec(statusLine)?.[1]), headers, body, text };
    });
}

/** One bash for the whole page, like a reader's terminal: each step's output and exit status. */
class Shell {
  private readonly child: ChildProcessWithoutNullStreams;
  private buffer = '';
  private waiting?: (value: { output: string; code: number }) => void;

  constructor(env: Record<string, string>) {
    this.child = spawn('bash', ['--noprofile', '--norc'], { env });
    this.child.stdout.on('data', (d: Buffer) => this.take(d.toString()));
    this.child.stderr.on('data', (d: Buffer) => this.take(d.toString()));
  }

  private take(text: string): void {
    this.buffer += text;
    const end = /\n__STEP_END__ (\d+)\n/.exec(this.buffer);
    if (end && this.waiting) {
      const output = this.buffer.slice(0, end.index);
      this.buffer = this.buffer.slice(end.index + end[0].length);
      const resolve = this.waiting;
      this.waiting = undefined;
      resolve({ output, code: Number(end[1]) });
    }
  }

  run(code: string): Promise<{ output: string; code: number }> {
    return new Promise((resolve) => {
      this.waiting = resolve;
      this.child.stdin.write(`{\n${code}\n}\nprintf '\\n__STEP_END__ %s\\n' "$?"\n`);
    });
  }

  close(): void {
    this.child.stdin.end();
    this.child.kill();
  }
}

const quote = (value: string): string => `'${value.replace(/'/g, `'\\''`)}'`;
const isProblem = (a: Answer) => /^application\/problem\+json/.test(a.headers['content-type'] ?? '');

describe('docs/walkthrough.md, step by step against a real stack', () => {
  let stack: TestStack;
  let hooks: Server;
  const callbacks: { headers: Record<string, string>; body: string }[] = [];

  beforeAll(async () => {
    // What the page asks of a reader's machine (bash, curl, jq, openssl): named here rather than failing a step.
    const missing = ['bash', 'curl', 'jq', 'openssl', 'base64', 'od'].filter(
      (tool) => spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0,
    );
    if (missing.length > 0) throw new Error(`docs/walkthrough.md needs ${missing.join(', ')} on the PATH`);
    // Applications stay IN_PROGRESS (4 s after creation) until the page's sandbox control decides them.
    stack = await startTestStack({
      merchantApiKeys: [{ name: 'dev', key: KEY }],
      sandbox: { lifecycle: { stepMs: 4_000, statuses: ['CREATED', 'IN_PROGRESS'] } },
    });
    // The callback step needs one received callback: an endpoint of the merchant's, and an application that calls it.
    hooks = await listen(
      (req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', () => {
          callbacks.push({
            headers: Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)])),
            body: Buffer.concat(chunks).toString('utf8'),
          });
          res.writeHead(204).end();
        });
      },
      0,
      '127.0.0.1',
    );
    const created = await stack.facade('/applications', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        merchantReference: 'walkthrough-callbacks',
        redirectUrl: 'https://shop.example/return',
        callbackUrl: `http://127.0.0.1:${boundPort(hooks)}/paylater`,
      }),
    });
    expect(created.status).toBe(201);
  }, 120_000);

  afterAll(async () => {
    if (hooks) await closeServer(hooks, 1_000);
    await stack?.close();
  });

  it('runs every sh block in order, each answering as the page says', async () => {
    const blocks = codeBlocks(readFileSync(PAGE, 'utf8')).filter((b) => b.lang === 'sh');
    let ref = '';
    let financeApplicationId = '';
    /** What each block must answer, in the page's order (a new block needs its check here). */
    const steps: { heading: string; check: (output: string, a: Answer[]) => void | Promise<void> }[] = [
      {
        heading: '0. Where things are',
        check: (output) => {
          ref = /reference (order-\d+)/.exec(output)?.[1] ?? '';
          expect(ref).not.toBe('');
        },
      },
      {
        heading: '1. Create a finance application',
        check: (_, [created]) => {
          expect(created).toMatchObject({ status: 201, body: { merchantReference: ref, bank: expect.any(Object) } });
          const body = created!.body as { workflowId: string; financeApplicationId: string };
          expect(body.workflowId).toBe(`finance-application:dev:${ref}`);
          financeApplicationId = body.financeApplicationId;
          expect(financeApplicationId).toEqual(expect.any(String));
          // Location on 201 (docs/walkthrough.md shows it): when the answer has one, it names the application.
          if (created!.headers.location !== undefined)
            expect(created!.headers.location).toMatch(`/applications/${ref}`);
        },
      },
      {
        heading: '1. Create a finance application',
        check: (_, [again, other]) => {
          expect(again).toMatchObject({ status: 200, body: { merchantReference: ref, financeApplicationId } });
          // A reused reference with another body: 409 as a problem answer (before that change: the first application).
          expect([200, 409]).toContain(other!.status);
          if (other!.status === 409) expect(isProblem(other!)).toBe(true);
          else expect(other!.body).toMatchObject({ financeApplicationId });
        },
      },
      {
        heading: '2. Read it',
        check: async (_, [read]) => {
          expect(read).toMatchObject({
            status: 200,
            body: { merchantReference: ref, financeApplicationId, done: false, history: expect.any(Array) },
          });
          expect((await shell.run('echo "$ID"')).output.trim()).toBe(financeApplicationId);
        },
      },
      {
        heading: '3. Wait for a change (long-poll)',
        check: (_, [waited]) => {
          expect(waited).toMatchObject({ status: 200, headers: { 'wait-outcome': 'changed' } });
          expect(waited!.body).toMatchObject({ status: 'IN_PROGRESS', done: false });
        },
      },
      {
        heading: '4. Let the bank decide',
        check: (_, [control, read]) => {
          expect(control!.status).toBe(204);
          expect(read).toMatchObject({ status: 200, body: { status: 'DECLINED', done: true } });
          expect((read!.body as { history: { status: string; source: string }[] }).history.at(-1)).toMatchObject({
            status: 'DECLINED',
            source: 'webhook',
          });
        },
      },
      {
        heading: '5. List the applications',
        check: (_, [list]) => {
          expect(list!.status).toBe(200);
          const { applications } = list!.body as { applications: { merchantReference: string }[] };
          expect(applications.map((a) => a.merchantReference)).toContain(ref);
        },
      },
      {
        heading: '6. Refresh a consent',
        check: (_, [started, progress]) => {
          expect(started).toMatchObject({ status: 202, body: { taskId: expect.any(String) } });
          const { consentId, taskId } = started!.body as { consentId: string; taskId: string };
          expect(progress).toMatchObject({ status: 200, body: { consentId, taskId, banks: expect.any(Array) } });
        },
      },
      {
        heading: '7. A bad request',
        check: (_, [refused]) => {
          expect(refused!.status).toBe(400);
          expect(refused!.headers['content-type']).toMatch(/^application\/(problem\+)?json/);
          expect(JSON.stringify(refused!.body)).toContain('redirectUrl');
          if (isProblem(refused!)) expect(refused!.body).toMatchObject({ type: expect.any(String), status: 400 });
        },
      },
      {
        heading: "8. Check a callback's signature",
        check: (output) => expect(output).toMatch(/^verified \(sent -?\d+s ago\)$/m),
      },
    ];
    expect(blocks.map((b) => b.heading)).toEqual(steps.map((s) => s.heading));

    const shell = new Shell({
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      API: stack.internalUrl,
      BANK: stack.sandbox.url,
      KEY,
      SECRET: TEST_CALLBACK_SIGNING_SECRET,
    });
    try {
      for (const [i, block] of blocks.entries()) {
        if (block.heading.startsWith('8.')) {
          // What the reader's endpoint received: the first callback of the application made above.
          const { headers, body } = await eventually(() => callbacks[0]);
          await shell.run(
            [
              `WEBHOOK_ID=${quote(headers['webhook-id']!)}`,
              `WEBHOOK_TIMESTAMP=${quote(headers['webhook-timestamp']!)}`,
              `WEBHOOK_SIGNATURE=${quote(headers['webhook-signature']!)}`,
              `BODY=${quote(body)}`,
            ].join('\n'),
          );
        }
        const { output, code } = await shell.run(block.code);
        try {
          expect(code).toBe(0);
          await steps[i]!.check(output, answers(output));
        } catch (err) {
          throw new Error(`step ${i} ("${block.heading}") answered:\n${output}\n${(err as Error).message}`);
        }
      }
    } finally {
      shell.close();
    }
  }, 120_000);
});
