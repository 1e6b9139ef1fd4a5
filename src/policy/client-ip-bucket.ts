/**
 * The rate-limit bucket of a client address: one bucket per IPv4 address, one per IPv6 /64. An IPv6 client
 * is routinely handed a whole /64 (SLAAC, privacy addresses), so counting its addresses apart would let it
 * escape any per-IP limit; Cloudflare's own rate limiting groups IPv6 the same way.
 */

import ipaddr from "ipaddr.js";

/** IPv6 addresses sharing this many leading bits share a bucket (a multiple of 16: whole address parts). */
export const IPV6_BUCKET_PREFIX_LENGTH = 64;

const BITS_PER_PART = 16;

/**
 * Text that may be an address at all. ipaddr.js tells valid from invalid by throwing, and an exception costs
 * tens of microseconds, so text that cannot be an address never reaches it (and IPv6 text never reaches the
 * IPv4 parser): a client choosing its address text cannot make each request cost that much.
 */
const MAYBE_IPV4 = /^[0-9.]{1,64}$/;
const MAYBE_IPV6 = /^[0-9A-Fa-f:.]{2,64}(?:%[0-9A-Za-z._~-]{1,64})?$/;

/** An IPv4 address already in canonical text (no leading zeros): its own bucket, without parsing it. */
const CANONICAL_IPV4 = /^(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$/;

/**
 * The bucket of `address`, in canonical text: an IPv4 address as itself (`203.0.113.7`), an IPv4-mapped IPv6
 * address as its IPv4 address (`::ffff:203.0.113.7` → `203.0.113.7`), any other IPv6 address as its /64 in
 * RFC 5952 form (`2001:0db8:0:0::2` → `2001:db8::/64`; a zone id is dropped). Text that is not an address
 * (an empty header, a forged value) is its own bucket, unchanged.
 */
export function clientIpBucket(address: string): string {
  if (CANONICAL_IPV4.test(address)) return address;
  if (MAYBE_IPV4.test(address)) return ipaddr.IPv4.isValidFourPartDecimal(address) ? ipaddr.IPv4.parse(address).toString() : address;
  if (!MAYBE_IPV6.test(address)) return address;
  let ipv6: ipaddr.IPv6;
  try {
    ipv6 = ipaddr.IPv6.parse(address);
  } catch {
    return address;
  }
  if (ipv6.isIPv4MappedAddress()) return ipv6.toIPv4Address().toString();
  const keptParts = IPV6_BUCKET_PREFIX_LENGTH / BITS_PER_PART;
  const network = new ipaddr.IPv6(ipv6.parts.map((part, i) => (i < keptParts ? part : 0)));
  return `${network.toRFC5952String()}/${IPV6_BUCKET_PREFIX_LENGTH}`;
}
