/**
 * API keys of the worker tests. vitest.config.ts hashes them into TOLLGATE_API_KEYS (the miniflare binding
 * overrides .dev.vars), so the development key keeps working and a second account exists.
 */

export const DEV_KEY = "tgk_dev_local_only_0000000000000000";

export const TEST_KEYS = {
  /** The development key of .dev.vars (account acct_dev). */
  dev: { account: "acct_dev", key: DEV_KEY },
  /** A second key of acct_dev: same account, same data. */
  devSecond: { account: "acct_dev", key: "tgk_test_dev_second_key_000000000000" },
  /** acct_dev keys for tests that send many requests, each in its own rate-limit bucket. */
  devPaging: { account: "acct_dev", key: "tgk_test_dev_paging_0000000000000000" },
  devFlood: { account: "acct_dev", key: "tgk_test_dev_flood_00000000000000000" },
  devClient: { account: "acct_dev", key: "tgk_test_dev_client_0000000000000000" },
  /** The valid key of the per-IP test, whose 150 requests must not meet another test's use of the same key. */
  devPerIp: { account: "acct_dev", key: "tgk_test_dev_per_ip_0000000000000000" },
  /** The `dev` of the /service_users run of the tests both user paths share (each run in its own bucket). */
  devServiceUsers: { account: "acct_dev", key: "tgk_test_dev_service_users_000000000" },
  /** Another account, for isolation tests. */
  other: { account: "acct_other", key: "tgk_test_other_account_000000000000" },
  /** An account whose host quota a test fills on purpose. */
  quota: { account: "acct_quota", key: "tgk_test_quota_account_000000000000" },
} as const;

export type TestKeyName = keyof typeof TEST_KEYS;
