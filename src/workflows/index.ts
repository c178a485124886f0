// The worker's workflowsPath: every workflow type the task queue serves, re-exported (each folder's workflow.ts).
export {};
export * from './consent-refresh/workflow';
export * from './transaction-events/workflow';
export * from './late-account-events/workflow';
export * from './finance-application/workflow';
export * from './consent-claim/workflow';
export * from './callback-redelivery/workflow';
export * from './merchant-secrets/workflow';
export * from './callback-ledger/workflow';
export * from './callback-bulk-resend/workflow';
