import type { lookup as dnsLookup, LookupAddress } from 'node:dns';
import { isIP } from 'node:net';
import { guardedLookup } from '../../src/activities/merchant-callback';
import { classifyAddress, type AddressClass } from '../../src/security/address-class';
import {
  checkCallbackUrl,
  isLoopbackHost,
  isNonPublicAddress,
  parseAllowedOrigins,
  permitsResolvedAddress,
  type CallbackAllowList,
} from '../../src/security/callback-url';

const listed = (value: string): CallbackAllowList => {
  const { origins, problems } = parseAllowedOrigins(value);
  expect(problems).toEqual([]);
  return { origins, loopback: false };
};
const allowList = listed('https://shop.example, https://hooks.shop.example:8443,http://legacy.shop.example');
const allowed = (url: string, list = allowList) => checkCallbackUrl(url, list).allowed;

describe('parseAllowedOrigins (CALLBACK_ALLOWED_ORIGINS)', () => {
  it('normalises each origin: lowercase host, default port dropped, trailing slash accepted, duplicates once', () => {
    expect(
      parseAllowedOrigins(
        ' https://Shop.EXAMPLE/ ,https://shop.example:443,HTTP://legacy.shop.example:80, https://hooks.shop.example:8443,,',
      ),
    ).toEqual({
      origins: ['https://shop.example', 'http://legacy.shop.example', 'https://hooks.shop.example:8443'],
      problems: [],
    });
    expect(parseAllowedOrigins('http://[::1]:9000,http://127.0.0.1:9000').origins).toEqual([
      'http://[::1]:9000',
      'http://127.0.0.1:9000',
    ]);
  });

  it.each([
    ['shop.example', /not an origin/],
    ['ftp://shop.example', /only http and https/],
    ['https://user:pw@shop.example', /no credentials/],
    ['https://shop.example/hooks', /no path, query or fragment/],
    ['https://shop.example?x=1', /no path, query or fragment/],
    ['https://shop.example/#frag', /no path, query or fragment/],
    ['https://shop.example:99999', /not an origin/],
  ])('refuses %s', (entry, problem) => {
    const { origins, problems } = parseAllowedOrigins(entry);
    expect(origins).toEqual([]);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(problem);
  });

  it('never echoes credentials in a problem', () => {
    expect(parseAllowedOrigins('https://user:hunter2@shop.example').problems.join()).not.toContain('hunter2');
  });
});

describe('checkCallbackUrl: exact origin match', () => {
  it('allows any path and query on a listed origin', () => {
    expect(checkCallbackUrl('https://shop.example/paylater/events?k=v', allowList)).toEqual({
      allowed: true,
      origin: 'https://shop.example',
    });
    expect(allowed('https://shop.example')).toBe(true);
    expect(allowed('https://shop.example/')).toBe(true);
    expect(allowed('https://hooks.shop.example:8443/x')).toBe(true);
    expect(allowed('http://legacy.shop.example/x')).toBe(true);
  });

  it('matches scheme, host and port exactly (default ports are the same origin)', () => {
    expect(allowed('https://shop.example:443/x')).toBe(true);
    expect(allowed('http://shop.example/x')).toBe(false); // scheme
    expect(allowed('https://shop.example:8443/x')).toBe(false); // port
    expect(allowed('https://hooks.shop.example/x')).toBe(false); // listed with :8443 only
    expect(allowed('https://hooks.shop.example:8444/x')).toBe(false);
    expect(allowed('https://evil.shop.example/x')).toBe(false); // no subdomain matching
    expect(allowed('https://shop.example.evil.example/x')).toBe(false);
    expect(allowed('https://shop.example./x')).toBe(false); // trailing-dot host is another origin
  });

  it('is case-insensitive on scheme and host, as URLs are', () => {
    expect(allowed('HTTPS://SHOP.EXAMPLE/Hooks')).toBe(true);
    expect(allowed('https://Hooks.Shop.Example:8443/')).toBe(true);
  });

  it('refuses credentials in the URL, even on a listed origin', () => {
    const verdict = checkCallbackUrl('https://user:pw@shop.example/x', allowList);
    expect(verdict).toEqual({
      allowed: false,
      origin: 'https://shop.example',
      reason: 'callback URL must not carry credentials (user:password@)',
      variable: 'CALLBACK_ALLOWED_ORIGINS',
    });
    expect(allowed('https://user@shop.example/x')).toBe(false);
    expect(allowed('https://:pw@shop.example/x')).toBe(false);
  });

  it.each([
    ['ftp://shop.example/x', /scheme ftp: is not http or https/],
    ['javascript:alert(1)', /scheme javascript: is not http or https/],
    ['file:///etc/passwd', /scheme file: is not http or https/],
    ['not a url', /not an absolute URL/],
    ['/relative/path', /not an absolute URL/],
  ])('refuses %s', (url, reason) => {
    const verdict = checkCallbackUrl(url, allowList);
    expect(verdict.allowed).toBe(false);
    expect(!verdict.allowed && verdict.reason).toMatch(reason);
  });

  it('names the origin (never the path or query) and the variable when refusing', () => {
    expect(checkCallbackUrl('https://evil.example/steal?token=secret', allowList)).toEqual({
      allowed: false,
      origin: 'https://evil.example',
      reason: 'callback origin https://evil.example is not in CALLBACK_ALLOWED_ORIGINS',
      variable: 'CALLBACK_ALLOWED_ORIGINS',
    });
    expect(checkCallbackUrl('https://shop.example/x', { origins: [], loopback: false })).toMatchObject({
      allowed: false,
      reason: 'callback origin https://shop.example is not allowed: CALLBACK_ALLOWED_ORIGINS is empty',
    });
  });

  it("names a merchant's own list (MERCHANTS_FILE callbackAllowedOrigins) when that is the one that applied", () => {
    const own: CallbackAllowList = {
      origins: ['https://hooks.shop-a.example'],
      loopback: false,
      source: { variable: 'MERCHANTS_FILE', name: 'MERCHANTS_FILE callbackAllowedOrigins of merchant "shop-a"' },
    };
    expect(checkCallbackUrl('https://evil.example/x', own)).toEqual({
      allowed: false,
      origin: 'https://evil.example',
      reason:
        'callback origin https://evil.example is not in MERCHANTS_FILE callbackAllowedOrigins of merchant "shop-a"',
      variable: 'MERCHANTS_FILE',
    });
    expect(checkCallbackUrl('https://evil.example/x', { ...own, origins: [] })).toMatchObject({
      reason:
        'callback origin https://evil.example is not allowed: MERCHANTS_FILE callbackAllowedOrigins of merchant "shop-a" is empty',
      variable: 'MERCHANTS_FILE',
    });
    expect(checkCallbackUrl('https://hooks.shop-a.example/x', own)).toEqual({
      allowed: true,
      origin: 'https://hooks.shop-a.example',
    });
  });
});

describe('loopback and private addresses', () => {
  const embedded: CallbackAllowList = { origins: [], loopback: true };

  it('are refused unless listed, outside the embedded default', () => {
    for (const url of [
      'http://127.0.0.1:8080/x',
      'http://localhost:3000/x',
      'http://[::1]:3000/x',
      'http://10.0.0.5/x',
      'http://169.254.169.254/latest/meta-data',
      'http://[::ffff:127.0.0.1]/x',
      'http://2130706433/x', // 127.0.0.1 as one number
      'http://0x7f.1/x',
    ])
      expect([url, allowed(url)]).toEqual([url, false]);
  });

  it('the embedded default allows loopback origins on any port: IPv4, IPv6, localhost, any spelling', () => {
    for (const url of [
      'http://127.0.0.1:8080/x',
      'http://127.1:8080/x',
      'https://localhost/x',
      'http://LOCALHOST:3000/x',
      'http://shop.localhost:3000/x',
      'http://[::1]:3000/x',
      'http://[0:0:0:0:0:0:0:1]/x',
      'http://[::ffff:127.0.0.1]:9/x',
    ])
      expect([url, allowed(url, embedded)]).toEqual([url, true]);
    for (const url of ['http://10.0.0.5/x', 'http://192.168.1.10/x', 'https://shop.example/x', 'http://[fd00::1]/x'])
      expect([url, allowed(url, embedded)]).toEqual([url, false]);
    expect(allowed('http://user:pw@127.0.0.1:8080/x', embedded)).toBe(false);
  });

  it('an explicitly listed loopback or private origin allows exactly that origin', () => {
    const list = listed('http://127.0.0.1:9000,http://[::1]:9000,http://10.0.0.5:8080');
    expect(allowed('http://127.0.0.1:9000/x', list)).toBe(true);
    expect(allowed('http://[::1]:9000/x', list)).toBe(true);
    expect(allowed('http://[0::1]:9000/x', list)).toBe(true);
    expect(allowed('http://10.0.0.5:8080/x', list)).toBe(true);
    expect(allowed('http://127.0.0.1:9001/x', list)).toBe(false);
    expect(allowed('http://localhost:9000/x', list)).toBe(false); // another origin than 127.0.0.1:9000
  });

  it('isLoopbackHost / isNonPublicAddress classify hosts and addresses', () => {
    expect(['localhost', '127.0.0.1', '127.255.0.9', '[::1]', '::1', '[::ffff:7f00:1]'].map(isLoopbackHost)).toEqual(
      Array(6).fill(true),
    );
    expect(['shop.example', '10.0.0.1', '[fe80::1]', 'localhost.shop.example'].map(isLoopbackHost)).toEqual(
      Array(4).fill(false),
    );
    for (const address of [
      '10.1.2.3',
      '172.16.0.1',
      '192.168.0.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '::',
      'fe80::1',
      'fc00::1',
      '::ffff:192.168.0.1',
    ])
      expect([address, isNonPublicAddress(address)]).toEqual([address, true]);
    for (const address of ['93.184.216.34', '8.8.8.8', '2606:2800:220:1::1', '172.32.0.1'])
      expect([address, isNonPublicAddress(address)]).toEqual([address, false]);
  });

  it('permitsResolvedAddress: a host name must resolve to a public address (DNS rebinding guard)', () => {
    expect(permitsResolvedAddress('hooks.shop.example', '93.184.216.34', allowList)).toBe(true);
    expect(permitsResolvedAddress('hooks.shop.example', '10.0.0.1', allowList)).toBe(false);
    expect(permitsResolvedAddress('hooks.shop.example', '127.0.0.1', allowList)).toBe(false);
    expect(permitsResolvedAddress('hooks.shop.example', '127.0.0.1', embedded)).toBe(true);
    expect(permitsResolvedAddress('hooks.shop.example', '10.0.0.1', embedded)).toBe(false);
    expect(permitsResolvedAddress('localhost', '::1', allowList)).toBe(true);
  });
});

/**
 * The SSRF table: every address as the host of a callback URL (a literal) and as a DNS answer for a listed name
 * (guardedLookup with an injected resolver). Only globally routable unicast passes, and an address that embeds an
 * IPv4 address (IPv4-mapped, NAT64, 6to4, ISATAP) is what that IPv4 address is; Teredo and local-use NAT64 never pass.
 * Loopback passes where the allow-list allows loopback (the embedded stack) and nowhere else.
 */
describe('address classes: what a callback may reach (literal or resolved)', () => {
  const TABLE: [address: string, expected: AddressClass, what: string][] = [
    ['93.184.216.34', 'public', 'IPv4'],
    ['8.8.8.8', 'public', 'IPv4'],
    ['172.32.0.1', 'public', 'just past 172.16.0.0/12'],
    ['2606:2800:220:1::1', 'public', 'IPv6 global unicast'],
    ['2001:4860:4860::8888', 'public', 'IPv6 in 2001::/16 but past 2001::/23'],
    ['::ffff:93.184.216.34', 'public', 'IPv4-mapped public'],
    ['64:ff9b::5db8:d822', 'public', 'NAT64 of a public IPv4 (what DNS64 answers)'],
    ['2002:5db8:d822::1', 'public', '6to4 of a public IPv4'],
    ['2a00:1450:4001:80b:0:5efe:5db8:d822', 'public', 'ISATAP of a public IPv4'],
    ['127.0.0.1', 'loopback', 'IPv4 loopback'],
    ['127.255.0.9', 'loopback', 'IPv4 loopback'],
    ['::1', 'loopback', 'IPv6 loopback'],
    ['::ffff:127.0.0.1', 'loopback', 'IPv4-mapped loopback: the socket connects to 127.0.0.1'],
    ['0.0.0.0', 'non-public', 'unspecified (connects to this host)'],
    ['10.1.2.3', 'non-public', 'private'],
    ['100.64.0.1', 'non-public', 'CGNAT'],
    ['169.254.169.254', 'non-public', 'link-local (cloud metadata)'],
    ['172.16.0.1', 'non-public', 'private'],
    ['192.0.0.1', 'non-public', 'IETF protocol assignments'],
    ['192.0.2.1', 'non-public', 'documentation'],
    ['192.168.0.1', 'non-public', 'private'],
    ['198.18.0.1', 'non-public', 'benchmarking'],
    ['203.0.113.1', 'non-public', 'documentation'],
    ['224.0.0.1', 'non-public', 'multicast'],
    ['240.0.0.1', 'non-public', 'reserved'],
    ['255.255.255.255', 'non-public', 'broadcast'],
    ['::', 'non-public', 'unspecified'],
    ['fe80::1', 'non-public', 'link-local'],
    ['fe80::1%eth0', 'non-public', 'link-local with a zone'],
    ['fc00::1', 'non-public', 'unique local'],
    ['fd00::1', 'non-public', 'unique local'],
    ['fec0::1', 'non-public', 'site-local (deprecated)'],
    ['ff02::1', 'non-public', 'multicast'],
    ['::ffff:10.0.0.1', 'non-public', 'IPv4-mapped private'],
    ['::ffff:169.254.169.254', 'non-public', 'IPv4-mapped link-local'],
    ['::7f00:1', 'non-public', 'IPv4-compatible loopback'],
    ['::a00:1', 'non-public', 'IPv4-compatible private'],
    ['::ffff:0:a00:1', 'non-public', 'IPv4-translated (SIIT)'],
    ['64:ff9b::7f00:1', 'non-public', 'NAT64 of loopback: the gateway, not this host'],
    ['64:ff9b::a00:1', 'non-public', 'NAT64 of a private IPv4'],
    ['64:ff9b::a9fe:a9fe', 'non-public', 'NAT64 of the metadata address'],
    ['64:ff9b:1::5db8:d822', 'non-public', 'local-use NAT64 (64:ff9b:1::/48)'],
    ['2002:7f00:1::1', 'non-public', '6to4 of loopback'],
    ['2002:a00:1::1', 'non-public', '6to4 of a private IPv4'],
    ['2002:a9fe:a9fe::1', 'non-public', '6to4 of the metadata address'],
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'non-public', 'Teredo'],
    ['2001:0:a00:1::f5ff:fffe', 'non-public', 'Teredo'],
    ['2001:2::1', 'non-public', 'benchmarking'],
    ['2001:10::1', 'non-public', 'ORCHID'],
    ['2001:db8::1', 'non-public', 'documentation'],
    ['3fff::1', 'non-public', 'documentation'],
    ['100::1', 'non-public', 'discard-only'],
    ['5f00::1', 'non-public', 'SRv6 SIDs (outside 2000::/3)'],
    ['2a00:1450:4001:80b:0:5efe:a00:1', 'non-public', 'ISATAP of a private IPv4'],
    ['2a00:1450:4001:80b:200:5efe:7f00:1', 'non-public', 'ISATAP of loopback'],
    ['0x7f.1', 'non-public', 'not a canonical address'],
    ['2130706433', 'non-public', 'not a canonical address'],
    ['shop.example', 'non-public', 'not an address'],
  ];
  const strict: CallbackAllowList = { origins: ['https://hooks.shop.example'], loopback: false };
  const embedded: CallbackAllowList = { origins: [], loopback: true };

  it.each(TABLE)('classifyAddress(%s) is %s (%s)', (address, expected) => {
    expect(classifyAddress(address)).toBe(expected);
    expect(isNonPublicAddress(address)).toBe(expected !== 'public');
  });

  it.each(TABLE.filter(([address]) => isIP(address) !== 0))(
    'a callback URL to the literal %s (%s) passes only as loopback on the embedded stack',
    (address, expected) => {
      const url = `http://${isIP(address) === 6 ? `[${address}]` : address}:8080/hooks`;
      expect(checkCallbackUrl(url, embedded).allowed).toBe(expected === 'loopback');
      expect(checkCallbackUrl(url, strict).allowed).toBe(false);
    },
  );

  const resolvingTo = (...addresses: string[]) =>
    ((_host: string, _options: unknown, callback: (err: Error | null, found: LookupAddress[]) => void) =>
      callback(
        null,
        addresses.map((address) => ({ address, family: isIP(address) || 4 })),
      )) as unknown as typeof dnsLookup;
  const lookup = (allowList: CallbackAllowList, all: boolean, ...addresses: string[]) =>
    new Promise<{ err: (Error & { code?: string }) | null; result: unknown }>((resolve) =>
      guardedLookup(allowList, resolvingTo(...addresses))('hooks.shop.example', { all }, (err, result) =>
        resolve({ err, result }),
      ),
    );

  it.each(TABLE)(
    'a listed host name resolving to %s (%s): through only if public, or loopback on the embedded stack',
    async (address, expected) => {
      for (const [allowList, passes] of [
        [strict, expected === 'public'],
        [embedded, expected !== 'non-public'],
      ] as const) {
        const { err, result } = await lookup(allowList, true, address);
        if (passes) {
          expect(err).toBeNull();
          expect(result).toEqual([{ address, family: isIP(address) || 4 }]);
        } else {
          expect(err?.code).toBe('ERR_CALLBACK_NON_PUBLIC_ADDRESS');
          expect(err?.message).toBe(`hooks.shop.example resolves to a non-public address (${address})`);
        }
      }
    },
  );

  it('refuses an answer if any of its addresses is refused; one address when net asks for one', async () => {
    expect((await lookup(strict, true, '93.184.216.34', '64:ff9b::a00:1')).err?.code).toBe(
      'ERR_CALLBACK_NON_PUBLIC_ADDRESS',
    );
    expect((await lookup(strict, true, '2002:a9fe:a9fe::1', '93.184.216.34')).err?.code).toBe(
      'ERR_CALLBACK_NON_PUBLIC_ADDRESS',
    );
    const one = await new Promise<unknown[]>((resolve) =>
      guardedLookup(strict, resolvingTo('64:ff9b::5db8:d822', '93.184.216.34'))(
        'hooks.shop.example',
        {},
        (err, address, family) => resolve([err, address, family]),
      ),
    );
    expect(one).toEqual([null, '64:ff9b::5db8:d822', 6]);
  });
});
