/** `npm run merchant-keys` / `npm run erase-merchant`: the command line (src/tools/merchant-keys.ts). */
import { parseMerchantKeysArgs } from '../../src/tools/merchant-keys';

describe('parseMerchantKeysArgs', () => {
  it('reads list, rotate and a confirmed erase', () => {
    expect(parseMerchantKeysArgs(['list'])).toEqual({ command: 'list' });
    expect(parseMerchantKeysArgs(['rotate', 'shop-a'])).toEqual({ command: 'rotate', merchantId: 'shop-a' });
    expect(parseMerchantKeysArgs(['erase', 'shop-a', '--confirm', 'shop-a'])).toEqual({
      command: 'erase',
      merchantId: 'shop-a',
    });
  });

  it('never erases without the id repeated, nor a malformed id', () => {
    expect(() => parseMerchantKeysArgs(['erase', 'shop-a'])).toThrow(/repeat the merchant's id as --confirm shop-a/);
    expect(() => parseMerchantKeysArgs(['erase', 'shop-a', '--confirm', 'shop-b'])).toThrow(/--confirm shop-a/);
    expect(() => parseMerchantKeysArgs(['erase', 'shop:a', '--confirm', 'shop:a'])).toThrow(/needs a merchant id/);
    expect(() => parseMerchantKeysArgs([])).toThrow(/a command is required/);
    expect(() => parseMerchantKeysArgs(['purge', 'shop-a'])).toThrow(/unknown command purge/);
  });
});
