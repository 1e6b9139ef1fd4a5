/**
 * The running test file's own names (test/support/test-file-identity.ts): its client IP and its variants of
 * the test API keys. Files share one workerd, so requests that count against a client IP or an API key use
 * these rather than a value every file would send.
 */

import { expect } from "vitest";
import { testFileAccount, testFileApiKey, testFileIp, testFileSlug } from "../support/test-file-identity.ts";
import { ACCOUNT_PER_FILE, TEST_KEYS, type TestKeyName } from "./management/keys.ts";

/** The slug of the file being run; read at each call, since the helpers that ask are shared by every file. */
export function thisFileSlug(): string {
  const path = expect.getState().testPath;
  if (path === undefined) throw new Error("no test file is running: call this from a test file or a hook");
  return testFileSlug(path);
}

/** This file's client address (`n` > 0: another address of this file, for tests that need two). */
export function thisFileIp(n = 0): string {
  return testFileIp(thisFileSlug(), n);
}

/** The account of this file's key for `role`: this file's own for the roles of ACCOUNT_PER_FILE. */
export function thisFileAccount(role: TestKeyName): string {
  const { account } = TEST_KEYS[role];
  return ACCOUNT_PER_FILE.has(role) ? testFileAccount(account, thisFileSlug()) : account;
}

/** This file's key for `role`: of {@link thisFileAccount}, with this file's own per-key rate-limit bucket. */
export function thisFileKey(role: TestKeyName): string {
  return testFileApiKey(TEST_KEYS[role].key, thisFileSlug());
}
