/**
 * The problem details' pieces (src/api/problem-details.ts) as plain functions: field errors that name the field and
 * what is allowed, and docs/problems.md documenting exactly the problem types the code has.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import {
  fieldErrorsOf,
  parseInput,
  PROBLEM_TITLES,
  PROBLEM_TYPE_BASE,
  ProblemType,
  ValidationError,
} from '../../src/api/problem-details';
import {
  StartApplicationSchema,
  GetApplicationQuerySchema,
} from '../../src/api/resources/finance-applications/schemas';
import { StartRefreshBody } from '../../src/api/resources/consent-refresh/schemas';

const failure = (fn: () => unknown): ValidationError => {
  try {
    fn();
  } catch (err) {
    if (err instanceof ValidationError) return err;
    throw err;
  }
  throw new Error('did not fail');
};

describe('field errors', () => {
  it('an invalid duration names the field, the format and the bounds (not "Invalid input")', () => {
    const err = failure(() => parseInput(StartRefreshBody, { timeout: 'soon', quietPeriod: 10 }, 'body'));
    expect(err.fieldErrors).toEqual([
      {
        in: 'body',
        field: 'timeout',
        pointer: '#/timeout',
        detail: expect.stringMatching(
          /^must be whole milliseconds \(1000 to 86400000\) or a duration string like "30s".* between 1s and 1d$/,
        ),
      },
      {
        in: 'body',
        field: 'quietPeriod',
        pointer: '#/quietPeriod',
        detail: expect.stringContaining('between 100ms and 1d'),
      },
    ]);
    expect(err.message).toMatch(/^body field timeout: must be whole milliseconds/);
    expect(err.message).not.toMatch(/Invalid input/);
  });

  it('unknown keys: one error each, with the allowed ones (nested too)', () => {
    const err = failure(() =>
      parseInput(
        StartApplicationSchema,
        // `amount` is the bank's (passed on); `callbackURL` misspells ours; settings are ours and closed.
        {
          merchantReference: 'r',
          redirectUrl: 'https://s.example/',
          amount: 1,
          callbackURL: 'https://s.example/cb',
          settings: { deadlne: '1d' },
        },
        'body',
      ),
    );
    expect(err.fieldErrors!.map((e) => [e.field, e.detail]).sort()).toEqual([
      ['callbackURL', 'unknown field; did you mean callbackUrl?'],
      ['settings.deadlne', expect.stringMatching(/^unknown field; allowed: fastPollInterval, .*deadline$/)],
    ]);
    const query = failure(() => parseInput(GetApplicationQuerySchema, { wait: 'x' }, 'query'));
    expect(query.message).toBe('query parameter wait: unknown parameter; allowed: waitForChangeFrom, timeout');
  });

  it('a missing field is "required", a wrong type names the one expected', () => {
    const errors = fieldErrorsOf(
      z.object({ a: z.string(), b: z.array(z.string()) }).safeParse({ b: 'x' }).error!,
      'body',
    );
    expect(errors.map((e) => `${e.field} ${e.detail}`)).toEqual(['a is required', 'b must be a list']);
  });

  it('long-poll timeouts: the pattern holds the bounds', () => {
    for (const ok of ['1ms', '1500ms', '60000ms', '1s', '30s', '60s'])
      expect(GetApplicationQuerySchema.safeParse({ waitForChangeFrom: 'A', timeout: ok }).success).toBe(true);
    for (const bad of ['0s', '0ms', '61s', '60001ms', '030s', '1m', '1.5s', ''])
      expect(GetApplicationQuerySchema.safeParse({ waitForChangeFrom: 'A', timeout: bad }).success).toBe(false);
  });
});

describe('docs/problems.md', () => {
  it('documents every problem type, and no other, each with its title', () => {
    const page = readFileSync(join(__dirname, '../../docs/problems.md'), 'utf8');
    const rows = [...page.matchAll(/^\| `([a-z-]+)` +\| (\d{3}) +\| ([^|]+?) +\|/gm)].map((m) => ({
      type: `${PROBLEM_TYPE_BASE}${m[1]}`,
      title: m[3],
    }));
    const types = Object.values(ProblemType);
    expect(rows.map((r) => r.type).sort()).toEqual([...types].sort());
    for (const row of rows) expect(row.title).toBe(PROBLEM_TITLES[row.type as (typeof types)[number]]);
  });
});
