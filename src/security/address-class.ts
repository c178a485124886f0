import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * What an IP address is to an outbound call (merchant callbacks, src/security/callback-url.ts): `public` (globally
 * routable unicast), `loopback` (this host: 127.0.0.0/8, ::1, ::ffff:127.0.0.0/104) or `non-public` (everything
 * else, and anything that is not an address).
 *
 * ipaddr.js (the parser and range table that Express's proxy-addr uses) names the special ranges. Its 1.x table
 * calls some non-global space `unicast` (IPv4-compatible `::a.b.c.d`, 64:ff9b:1::/48, 198.18.0.0/15, the rest of
 * 2001::/23), so IPv6 must also be in 2000::/3, the only global unicast space IANA allocates, and a short list below
 * adds what the table lacks. An address that embeds an IPv4 address is what that IPv4 address is, for it is where
 * the packet ends up: IPv4-mapped (the socket connects to the IPv4 address itself), NAT64 64:ff9b::/96 (DNS64
 * synthesises it for every IPv4-only host: public ones must pass), 6to4 2002::/16 and ISATAP interface identifiers.
 * Teredo (2001::/32) and local-use NAT64 (64:ff9b:1::/48) are refused whole.
 */
export type AddressClass = 'public' | 'loopback' | 'non-public';

/** Not global although ipaddr.js 1.9 calls them unicast (IANA special-purpose registries, "globally reachable": no). */
const NON_GLOBAL_V4 = [ipaddr.IPv4.parseCIDR('198.18.0.0/15')]; // benchmarking (RFC 2544)
const GLOBAL_UNICAST_V6 = ipaddr.IPv6.parseCIDR('2000::/3');
const NON_GLOBAL_V6 = [
  '2001::/23', // IETF protocol assignments: Teredo, benchmarking, ORCHID… (regional registries start at 2001:200::)
  '2001:db8::/32', // documentation
  '3fff::/20', // documentation (RFC 9637)
].map((cidr) => ipaddr.IPv6.parseCIDR(cidr));
const NAT64_LOCAL_USE = ipaddr.IPv6.parseCIDR('64:ff9b:1::/48');

/** The class of one IP address in its textual form (`::1`, `10.0.0.1`; brackets and a zone id are accepted). */
export function classifyAddress(address: string): AddressClass {
  const text = address.replace(/^\[(.*)\]$/, '$1');
  // net.isIP first: only the canonical textual forms (ipaddr.js also parses `0x7f.1` and the like).
  if (isIP(text) === 0) return 'non-public';
  try {
    return classify(ipaddr.parse(text));
  } catch {
    return 'non-public';
  }
}

function classify(address: ipaddr.IPv4 | ipaddr.IPv6): AddressClass {
  return address.kind() === 'ipv4' ? classifyV4(address as ipaddr.IPv4) : classifyV6(address as ipaddr.IPv6);
}

function classifyV4(address: ipaddr.IPv4): AddressClass {
  const range = address.range();
  if (range === 'loopback') return 'loopback';
  if (range !== 'unicast' || NON_GLOBAL_V4.some((cidr) => address.match(cidr))) return 'non-public';
  return 'public';
}

function classifyV6(address: ipaddr.IPv6): AddressClass {
  const range = address.range();
  if (range === 'loopback') return 'loopback';
  // The socket connects to the IPv4 address itself: ::ffff:127.0.0.1 is this host's loopback.
  if (range === 'ipv4Mapped') return classifyV4(address.toIPv4Address());
  // Translated by a NAT64 gateway, relayed by 6to4: reaching the embedded IPv4 address, never this host's loopback.
  if (range === 'rfc6052') return publicOnly(embeddedV4(address.parts[6]!, address.parts[7]!));
  if (range === '6to4') return publicOnly(embeddedV4(address.parts[1]!, address.parts[2]!));
  if (range !== 'unicast' || address.match(NAT64_LOCAL_USE) || !address.match(GLOBAL_UNICAST_V6)) return 'non-public';
  if (NON_GLOBAL_V6.some((cidr) => address.match(cidr))) return 'non-public';
  // ISATAP (RFC 5214): interface identifier 0000:5efe or 0200:5efe, then the IPv4 address the tunnel goes to.
  const [, , , , u, v, hi, lo] = address.parts;
  if ((u === 0 || u === 0x200) && v === 0x5efe) return publicOnly(embeddedV4(hi!, lo!));
  return 'public';
}

function embeddedV4(hi: number, lo: number): ipaddr.IPv4 {
  return new ipaddr.IPv4([hi >> 8, hi & 0xff, lo >> 8, lo & 0xff]);
}

function publicOnly(embedded: ipaddr.IPv4): AddressClass {
  return classifyV4(embedded) === 'public' ? 'public' : 'non-public';
}
