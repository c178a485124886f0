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
    });
    expect(checkCallbackUrl('https://shop.example/x', { origins: [], loopback: false })).toMatchObject({
      allowed: false,
      reason: 'callback origin https://shop.example is not allowed: CALLBACK_ALLOWED_ORIGINS is empty',
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
