/** The whole stack in-process for a test file: tools/harness/in-process-stack.ts (shared with the benches). */
export * from '../../tools/harness/in-process-stack';
