/**
 * The bucket of `conn.client_ip` in rate-limit keys (fast-check): one per IPv6 /64 whatever the spelling,
 * different /64s apart, IPv4-mapped addresses with their IPv4 address, and text that is no address unchanged.
 */

import fc from "fast-check";
import ipaddr from "ipaddr.js";
import { describe, expect, it } from "vitest";
import { clientIpBucket, IPV6_BUCKET_PREFIX_LENGTH } from "../../../src/policy/client-ip-bucket.ts";

const part = fc.integer({ min: 0, max: 0xffff });
const half = fc.tuple(part, part, part, part);
const ipv4 = fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255), fc.nat(255)).map((octets) => octets.join("."));

/** The ways one IPv6 address can be written. */
const spellings: Array<(parts: number[]) => string> = [
  (parts) => parts.map((p) => p.toString(16).padStart(4, "0")).join(":"),
  (parts) => new ipaddr.IPv6(parts).toNormalizedString(),
  (parts) => new ipaddr.IPv6(parts).toRFC5952String(),
  (parts) => new ipaddr.IPv6(parts).toRFC5952String().toUpperCase(),
];
const spelling = fc.constantFrom(...spellings);

/** `::ffff:0:0/96` holds the IPv4-mapped addresses, which are not grouped by /64. */
const isMapped = (parts: number[]) => parts.slice(0, 5).every((p) => p === 0) && parts[5] === 0xffff;

describe("conn.client_ip in a bucket key", () => {
  it("any two IPv6 addresses in one /64, however written, share a bucket named by the /64", () => {
    fc.assert(
      fc.property(half, half, half, spelling, spelling, (prefix, a, b, spellA, spellB) => {
        const first = [...prefix, ...a];
        const second = [...prefix, ...b];
        fc.pre(!isMapped(first) && !isMapped(second));
        const bucket = clientIpBucket(spellA(first));
        expect(clientIpBucket(spellB(second))).toBe(bucket);
        expect(bucket).toBe(`${new ipaddr.IPv6([...prefix, 0, 0, 0, 0]).toRFC5952String()}/${IPV6_BUCKET_PREFIX_LENGTH}`);
      }),
      { numRuns: 500 },
    );
  });

  it("IPv6 addresses in different /64s are in different buckets", () => {
    fc.assert(
      fc.property(half, half, half, half, spelling, (prefixA, prefixB, a, b, spell) => {
        fc.pre(prefixA.some((p, i) => p !== prefixB[i]));
        const first = [...prefixA, ...a];
        const second = [...prefixB, ...b];
        fc.pre(!isMapped(first) && !isMapped(second));
        expect(clientIpBucket(spell(first))).not.toBe(clientIpBucket(spell(second)));
      }),
      { numRuns: 500 },
    );
  });

  it("an IPv4-mapped IPv6 address is in its IPv4 address's bucket, which holds that address alone", () => {
    fc.assert(
      fc.property(ipv4, ipv4, (address, other) => {
        const [a, b, c, d] = address.split(".").map(Number);
        expect(clientIpBucket(address)).toBe(address);
        expect(clientIpBucket(`::ffff:${address}`)).toBe(address);
        expect(clientIpBucket(`::FFFF:${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`)).toBe(address);
        expect(clientIpBucket(`0:0:0:0:0:ffff:${address}`)).toBe(address);
        if (other !== address) expect(clientIpBucket(other)).not.toBe(clientIpBucket(address));
      }),
    );
  });

  it("no IPv4 address shares a bucket with an IPv6 /64", () => {
    fc.assert(
      fc.property(ipv4, half, half, (address, prefix, rest) => {
        const parts = [...prefix, ...rest];
        fc.pre(!isMapped(parts));
        expect(clientIpBucket(new ipaddr.IPv6(parts).toString())).not.toBe(clientIpBucket(address));
      }),
    );
  });

  it("examples: 2001:db8::1 and 2001:0db8:0:0::2 share 2001:db8::/64; a zone id is dropped", () => {
    expect(clientIpBucket("2001:db8::1")).toBe("2001:db8::/64");
    expect(clientIpBucket("2001:0db8:0:0::2")).toBe("2001:db8::/64");
    expect(clientIpBucket("2001:db8:0:1::1")).toBe("2001:db8:0:1::/64");
    expect(clientIpBucket("fe80::1%eth0")).toBe("fe80::/64");
    expect(clientIpBucket("::1")).toBe("::/64");
  });

  it("text that is not an address keeps its raw text as the bucket", () => {
    for (const raw of ["", "unknown", "198.51.100.7, 203.0.113.9", "01.2.3.4", "1.2.3", "[2001:db8::1]", "2001:db8::1/64", " 198.51.100.7"]) {
      expect(clientIpBucket(raw)).toBe(raw);
    }
  });

  it("hostile text near an address's shape keeps its raw text: 10,000 colons, digits and dots, a long zone id", () => {
    for (const raw of [":".repeat(10_000), "1.".repeat(5_000), "1:".repeat(5_000), `fe80::1%${"e".repeat(65)}`, "2001:db8::1::1", "2001:db8::g"]) {
      expect(clientIpBucket(raw)).toBe(raw);
    }
  });
});
