/** The whole stack in-process for a test file: harness/in-process-stack.ts (shared with the benches). */
export * from '../../harness/in-process-stack';
