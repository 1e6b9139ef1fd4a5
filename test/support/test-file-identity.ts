/**
 * Names that belong to one worker test file. The worker project runs many files in one workerd (isolate:
 * false), so what a file puts in the runtime's state (rate-limit buckets keyed by client IP or API key,
 * Durable Objects named after them) must be its own. Pure: vitest.config.ts registers every file's keys with
 * these functions, and the files inside workerd derive the same names from their own path.
 */

/** Where the worker test files live, relative to the repository root. */
export const WORKER_TEST_DIR = "test/worker/";

/**
 * A file's short name: its path under test/worker/ without `.test.ts`, `/` as `-`
 * (`/…/test/worker/management/modules.test.ts` → `management-modules`).
 */
export function testFileSlug(path: string): string {
  const normalized = path.replaceAll("\\", "/");
  const at = normalized.lastIndexOf(`/${WORKER_TEST_DIR}`);
  const relative =
    at >= 0
      ? normalized.slice(at + WORKER_TEST_DIR.length + 1)
      : normalized.startsWith(WORKER_TEST_DIR)
        ? normalized.slice(WORKER_TEST_DIR.length)
        : normalized;
  return relative.replace(/\.test\.ts$/, "").replaceAll("/", "-");
}

/** FNV-1a, 32 bits: spreads similar slugs over the address space. */
function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash;
}

/**
 * The file's client address, a rate-limit bucket of its own (one per IPv4 address), in 100.64.0.0/10: no
 * test names an address there, so no override pattern or literal of a test meets it. vitest.config.ts checks
 * that no two files get the same one. `n` picks further addresses of the file.
 */
export function testFileIp(slug: string, n = 0): string {
  const hash = fnv1a(n === 0 ? slug : `${slug}#${n}`);
  return `100.${64 + ((hash >>> 16) & 63)}.${(hash >>> 8) & 255}.${hash & 255}`;
}

/** The file's own account for a test account whose data files must not share (`acct_other` → `acct_other_<slug>`). */
export function testFileAccount(account: string, slug: string): string {
  return `${account}_${slug}`;
}

/** The file's own variant of a test API key: its own per-key rate-limit bucket. */
export function testFileApiKey(key: string, slug: string): string {
  return `${key}_${slug}`;
}
