/** Reading HTTP Basic credentials, bounded, and comparing them by digest. */

import { describe, expect, it } from "vitest";
import { credentialDigest, MAX_BASIC_AUTHORIZATION_CHARS, matchesAny, presentedCredentials } from "../../../../src/policy/actions/basic-credentials.ts";

const basic = (text: string) => `Basic ${btoa(text)}`;

describe("presentedCredentials", () => {
  it("no header or another scheme: not presented", () => {
    expect(presentedCredentials(null)).toEqual({ presented: false });
    expect(presentedCredentials("Bearer abc")).toEqual({ presented: false });
    expect(presentedCredentials("Basically")).toEqual({ presented: false });
  });

  it("user:pass, divided at the first colon; the scheme in any case", () => {
    expect(presentedCredentials(basic("user:pa:ss"))).toEqual({ presented: true, username: "user", credential: "user:pa:ss" });
    expect(presentedCredentials(`bAsIc ${btoa("u:p")}`)).toMatchObject({ username: "u" });
  });

  it("UTF-8 after decoding (RFC 7617)", () => {
    const bytes = new TextEncoder().encode("jürgen:pässwörd");
    expect(presentedCredentials(`Basic ${btoa(String.fromCharCode(...bytes))}`)).toMatchObject({ username: "jürgen", credential: "jürgen:pässwörd" });
  });

  it("malformed: not base64, no colon, not UTF-8, empty", () => {
    for (const header of ["Basic %%%", basic("nocolon"), `Basic ${btoa("\xff\xfe:x")}`, "Basic", "Basic abc"]) {
      expect(presentedCredentials(header), header).toEqual({ presented: true, malformed: true });
    }
  });

  it(`a header longer than ${MAX_BASIC_AUTHORIZATION_CHARS} characters is refused unread, however valid`, () => {
    const huge = basic(`user:${"p".repeat(1_000_000)}`);
    expect(presentedCredentials(huge)).toEqual({ presented: true, malformed: true });
    expect(presentedCredentials(basic(`user:${"p".repeat(700)}`))).toMatchObject({ username: "user" });
  });
});

describe("matchesAny", () => {
  it("equal digests match, whichever position; a one-character difference or a prefix does not", async () => {
    const allowed = await Promise.all(["user:password1", "admin:password2"].map(credentialDigest));
    expect(matchesAny(await credentialDigest("admin:password2"), allowed)).toBe(true);
    expect(matchesAny(await credentialDigest("user:password1"), allowed)).toBe(true);
    for (const guess of ["user:password2", "user:password", "user:password1 ", "", "admin:password2".repeat(100)]) {
      expect(matchesAny(await credentialDigest(guess), allowed), guess).toBe(false);
    }
    expect(matchesAny(await credentialDigest("x"), [])).toBe(false);
  });

  it("every digest is 32 bytes whatever the credential's length, so the comparison does the same work", async () => {
    expect((await credentialDigest("a:12345678")).length).toBe(32);
    expect((await credentialDigest(`a:${"x".repeat(128)}`)).length).toBe(32);
  });
});
