import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

/**
 * A search attribute key of one type: the SDK's SearchAttributeKey, which @temporalio/common 1.24 exports only from
 * its lib/ folder. Written out on each key below so that no declaration file (the published client's) names lib/.
 */
export type AttributeKey<T extends SearchAttributeType> = ReturnType<typeof defineSearchAttributeKey<T>>;
type Keyword = AttributeKey<typeof SearchAttributeType.KEYWORD>;

/** Contract search attributes, all Keyword. Registered by the embedded server and compose (deploy/temporal/setup.sh). */
/** The owning merchant (tenant) of an application, refresh or consent workflow: operators filter by it. */
export const MerchantId: Keyword = defineSearchAttributeKey('MerchantId', SearchAttributeType.KEYWORD);
export const MerchantReference: Keyword = defineSearchAttributeKey('MerchantReference', SearchAttributeType.KEYWORD);
export const FinanceApplicationId: Keyword = defineSearchAttributeKey(
  'FinanceApplicationId',
  SearchAttributeType.KEYWORD,
);
export const FinanceApplicationStatus: Keyword = defineSearchAttributeKey(
  'FinanceApplicationStatus',
  SearchAttributeType.KEYWORD,
);
export const ConsentId: Keyword = defineSearchAttributeKey('ConsentId', SearchAttributeType.KEYWORD);
/** The first other application the bank created for this reference (set only when one was seen). */
export const DuplicateFinanceApplicationId: Keyword = defineSearchAttributeKey(
  'DuplicateFinanceApplicationId',
  SearchAttributeType.KEYWORD,
);
export const RefreshTaskId: Keyword = defineSearchAttributeKey('RefreshTaskId', SearchAttributeType.KEYWORD);
/**
 * On a consent's claim: the first other merchant whose claim of it was refused (set only when one was; the claim's
 * state lists them all). Operators list conflicts with `ConsentClaimConflict IS NOT NULL`.
 */
export const ConsentClaimConflict: Keyword = defineSearchAttributeKey(
  'ConsentClaimConflict',
  SearchAttributeType.KEYWORD,
);
/**
 * When the application was first started (Datetime, set by the start call and carried over on continue-as-new):
 * the time window of GET /applications. A run's own StartTime restarts at each continue-as-new.
 */
export const FinanceApplicationCreatedAt: AttributeKey<typeof SearchAttributeType.DATETIME> = defineSearchAttributeKey(
  'FinanceApplicationCreatedAt',
  SearchAttributeType.DATETIME,
);

export const SEARCH_ATTRIBUTE_NAMES = [
  'MerchantId',
  'MerchantReference',
  'FinanceApplicationId',
  'FinanceApplicationStatus',
  'ConsentId',
  'RefreshTaskId',
  'DuplicateFinanceApplicationId',
  'ConsentClaimConflict',
] as const;

/** The Datetime search attributes (registered with that type; the names above are Keyword). */
export const DATETIME_SEARCH_ATTRIBUTE_NAMES = ['FinanceApplicationCreatedAt'] as const;

/** Every key above, for registration (the embedded server, the test servers, compose's setup.sh). */
export const SEARCH_ATTRIBUTE_KEYS: AttributeKey<SearchAttributeType>[] = [
  MerchantId,
  MerchantReference,
  FinanceApplicationId,
  FinanceApplicationStatus,
  ConsentId,
  RefreshTaskId,
  DuplicateFinanceApplicationId,
  ConsentClaimConflict,
  FinanceApplicationCreatedAt,
];
