import { chmodSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, isAbsolute, join } from 'node:path';
import type { ApplicationSnapshot } from './applications';
import type { ConsentsSnapshot } from './consents';
import type { WebhookDelivery } from './types';

/**
 * The embedded sandbox's memory on disk, so a restarted `npm start` goes on where it stopped (Temporal's SQLite file
 * is in the same data folder, and its workflows expect the bank to know their applications).
 *
 * What is stored (development data only, never a real bank's): each application's create request as the merchant
 * sent it (merchantReference, redirectUrl, any other field, and our webhookUrl with its hash), its status history,
 * script and webhook deliveries (bodies carry ids only); consents' overrides, refresh tasks (account ids, bank codes)
 * and the account webhooks sent. Not stored: access tokens (a client gets a 401 and a new token), fault switches,
 * script rules and call logs (test controls). The file is written atomically (a temporary file, then a rename) with
 * mode 0600 in a folder made with 0700, and is git-ignored with the rest of the data folder.
 */
export const SANDBOX_STATE_VERSION = 1;

export interface SandboxState {
  version: typeof SANDBOX_STATE_VERSION;
  savedAt: string;
  applications: ApplicationSnapshot[];
  consents: ConsentsSnapshot;
  accountWebhooks: WebhookDelivery[];
}

/** `<dataDir>/bank-sandbox.json`, relative to the project root (`root`) like the dev server's data folder. */
export function sandboxStateFile(dataDir: string, root: string): string {
  return join(isAbsolute(dataDir) ? dataDir : join(root, dataDir), 'bank-sandbox.json');
}

/** The saved state, or undefined when there is none yet. Throws on a file that cannot be read as one. */
export function loadSandboxState(file: string): SandboxState | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  const state = JSON.parse(text) as Partial<SandboxState>;
  if (state.version !== SANDBOX_STATE_VERSION || !Array.isArray(state.applications) || !state.consents)
    throw new Error(
      `${file} is not a bank-sandbox state of version ${SANDBOX_STATE_VERSION}; move it away to start afresh`,
    );
  return state as SandboxState;
}

/** Writes `text` to `file` atomically (temporary file in the same folder, then rename), readable by the owner only. */
export function writeAtomically(file: string, text: string): void {
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  const temporary = `${file}.${process.pid}.tmp`;
  writeFileSync(temporary, text, { mode: 0o600 });
  chmodSync(temporary, 0o600); // an older file of that name keeps its mode otherwise
  renameSync(temporary, file);
}

/**
 * Saves the state whenever it changed, checked every `everyMs` (a crash loses at most that much), and once more at
 * stop. Serialising a development sandbox's state takes microseconds to a few milliseconds.
 */
export class SandboxStateWriter {
  private last = '';
  private readonly handle: NodeJS.Timeout;

  constructor(
    private readonly file: string,
    private readonly read: () => Omit<SandboxState, 'version' | 'savedAt'>,
    everyMs = 250,
  ) {
    this.handle = setInterval(() => this.save(), everyMs);
    this.handle.unref();
  }

  /** Writes the state if it differs from the last one written; returns whether it wrote. */
  save(): boolean {
    const body = JSON.stringify(this.read());
    if (body === this.last) return false;
    const state = `{"version":${SANDBOX_STATE_VERSION},"savedAt":${JSON.stringify(new Date().toISOString())},${body.slice(1)}`;
    writeAtomically(this.file, state);
    this.last = body;
    return true;
  }

  /** The last save, then no more. */
  stop(): void {
    clearInterval(this.handle);
    this.save();
  }
}
