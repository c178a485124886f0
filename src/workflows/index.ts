// The worker's workflowsPath: every workflow type the task queue serves, re-exported (one file per workflow).
export {};
export * from './consent-refresh';
export * from './transaction-events';
export * from './late-account-events';
export * from './finance-application/workflow';
export * from './consent-claim';
