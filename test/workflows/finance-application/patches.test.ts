import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { FINANCE_APPLICATION_PATCHES } from '../../../src/workflows/finance-application/patches';

const HISTORIES = join(__dirname, '..', '..', 'histories');

/** The patch ids the committed finance-application histories recorded (core_patch markers), by file. */
function recordedPatches(): Map<string, Set<string>> {
  const byFile = new Map<string, Set<string>>();
  for (const file of readdirSync(HISTORIES).filter((f) => /^finance-application-.*\.json$/.test(f))) {
    const history = JSON.parse(readFileSync(join(HISTORIES, file), 'utf8')) as {
      events: {
        markerRecordedEventAttributes?: {
          markerName?: string;
          details?: Record<string, { payloads?: { data?: string }[] }>;
        };
      }[];
    };
    const ids = new Set<string>();
    for (const event of history.events) {
      const marker = event.markerRecordedEventAttributes;
      if (marker?.markerName !== 'core_patch') continue;
      for (const payload of marker.details?.['patch-data']?.payloads ?? []) {
        ids.add((JSON.parse(Buffer.from(payload.data ?? '', 'base64').toString('utf8')) as { id: string }).id);
      }
    }
    byFile.set(file, ids);
  }
  return byFile;
}

describe('finance application patches', () => {
  const recorded = recordedPatches();
  const all = new Set([...recorded.values()].flatMap((ids) => [...ids]));

  it('names every patch a committed history recorded (a renamed id would no longer replay its branch)', () => {
    expect([...all].filter((id) => !(FINANCE_APPLICATION_PATCHES as readonly string[]).includes(id))).toEqual([]);
  });

  it('carries only patches some committed history took, each id once', () => {
    expect(new Set(FINANCE_APPLICATION_PATCHES).size).toBe(FINANCE_APPLICATION_PATCHES.length);
    expect(FINANCE_APPLICATION_PATCHES.filter((id) => !all.has(id))).toEqual([]);
  });

  it('has histories from before the poll policy (the timer loop of legacy.ts) and from after it', () => {
    const withoutAny = [...recorded].filter(([, ids]) => ids.size === 0).map(([file]) => file);
    expect(withoutAny).toEqual(expect.arrayContaining(['finance-application-webhooks.json']));
    expect(recorded.get('finance-application-v4-tenant-signed-callbacks.json')?.size).toBeGreaterThan(0);
  });
});
