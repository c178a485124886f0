import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

/** Contract search attributes (DESIGN.md), all Keyword. Registered by the embedded server and compose. */
export const MerchantReference = defineSearchAttributeKey('MerchantReference', SearchAttributeType.KEYWORD);
export const FinanceApplicationId = defineSearchAttributeKey('FinanceApplicationId', SearchAttributeType.KEYWORD);
export const FinanceApplicationStatus = defineSearchAttributeKey(
  'FinanceApplicationStatus',
  SearchAttributeType.KEYWORD,
);
export const ConsentId = defineSearchAttributeKey('ConsentId', SearchAttributeType.KEYWORD);
export const RefreshTaskId = defineSearchAttributeKey('RefreshTaskId', SearchAttributeType.KEYWORD);

export const SEARCH_ATTRIBUTE_NAMES = [
  'MerchantReference',
  'FinanceApplicationId',
  'FinanceApplicationStatus',
  'ConsentId',
  'RefreshTaskId',
] as const;
