import type { ApplicationStatusResponse, CreateApplicationResponse } from '../shared/bank-wire';

/**
 * The activities the workflows call. createActivities(deps) (src/activities/index.ts) returns an object of
 * this shape; workflows use `proxyActivities<Activities>` with `import type` only.
 * Every activity takes one object parameter of plain data.
 */
export interface Activities {
  /** POST /applications with the hashed webhookUrl built from the merchant reference. */
  createApplication(input: {
    merchantReference: string;
    /** The merchant's create request: redirectUrl and any other fields, passed on to the bank. */
    application: Record<string, unknown>;
  }): Promise<CreateApplicationResponse>;

  /** GET /applications/{financeApplicationId}/status. */
  getApplicationStatus(input: {
    financeApplicationId: string;
    merchantReference: string;
  }): Promise<ApplicationStatusResponse>;

  /** PUT /refresh for one consent. */
  startRefresh(input: { consentId: string }): Promise<{ taskId: string }>;

  /** POST a JSON event to a merchant callback URL; retried on 5xx/network, not on 4xx. */
  notifyMerchant(input: {
    url: string;
    /** Sent as the Idempotency-Key header so the merchant can drop redeliveries. */
    idempotencyKey: string;
    event: Record<string, unknown>;
  }): Promise<{ delivered: boolean; status?: number }>;
}
