import { ApplicationFailure } from '@temporalio/common';
import type { MockActivityEnvironment } from '@temporalio/testing';

/** env.run with the activity's own input and result types (MockActivityEnvironment.run infers `unknown`). */
export function runActivity<I, O>(env: MockActivityEnvironment, fn: (input: I) => Promise<O>, input: I): Promise<O> {
  return env.run<[I], O, (input: I) => Promise<O>>(fn, input);
}

/** Awaits `run` and returns the ApplicationFailure it threw (fails the test if it threw something else). */
export async function failureOf(run: Promise<unknown>): Promise<ApplicationFailure> {
  const err = await run.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApplicationFailure);
  return err as ApplicationFailure;
}
