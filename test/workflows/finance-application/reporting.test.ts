import { OTHER_STATUS } from '../../../src/shared/metric-names';
import {
  duplicateCallbackKey,
  statusCallbackKey,
} from '../../../src/workflows/finance-application/merchant-notification';
import { statusLabel } from '../../../src/workflows/finance-application/reporting';
import { resolveSettings } from '../../../src/workflows/finance-application/state';

describe('finance application reporting', () => {
  it('labels the final status with the statuses the settings know, any other as one value', () => {
    const { settings } = resolveSettings({ statusOrder: { CREATED: 0, APPROVED: 1 }, terminalStatuses: ['VOIDED'] });
    expect(statusLabel(settings, undefined)).toBe('none');
    expect(statusLabel(settings, 'APPROVED')).toBe('APPROVED');
    expect(statusLabel(settings, 'VOIDED')).toBe('VOIDED');
    expect(statusLabel(settings, 'SOMETHING_NEW')).toBe(OTHER_STATUS);
  });

  it("keys the merchant's callbacks by workflow id and what they are about, the same in every run", () => {
    expect(statusCallbackKey('fa:shop:order-1', 'APPROVED')).toBe('fa:shop:order-1:APPROVED');
    expect(duplicateCallbackKey('fa:shop:order-1', 'fa-2')).toBe('fa:shop:order-1:duplicate:fa-2');
  });
});
