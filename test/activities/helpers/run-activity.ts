import type { MockActivityEnvironment } from '@temporalio/testing';

/** env.run with the activity's own input and result types (MockActivityEnvironment.run infers `unknown`). */
export function runActivity<I, O>(env: MockActivityEnvironment, fn: (input: I) => Promise<O>, input: I): Promise<O> {
  return env.run<[I], O, (input: I) => Promise<O>>(fn, input);
}
