/**
 * Which store object holds a bucket. Buckets are spread over SHARDS_PER_ACTION objects per (ingress instance or
 * global, scope, action): a bounded number of objects whatever the number of clients, each holding many buckets, so a
 * client's first request is a small call into an object that is already warm, and a flood spread over many keys
 * lands on a few objects instead of creating one per key. Few objects make an isolate's calls carry many takes
 * each (every call costs the object a storage commit, so that is where the time goes); more than one keeps a busy
 * limit from queueing on a single object (one object runs one call at a time). docs/rate-limits.md has the
 * measurements behind the number.
 */

import type { BucketName } from "./bucket-id.ts";

/** Objects one rate-limit action's buckets are spread over, per ingress instance. A divisor of 64 (see `shardIndex`). */
export const SHARDS_PER_ACTION = 4;

const BASE64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/** The shard of a bucket id (unpadded base64url of a SHA-256): its first character, 6 uniform bits. */
export function shardIndex(bucketId: string, shards = SHARDS_PER_ACTION): number {
  const value = BASE64URL.indexOf(bucketId[0] ?? "");
  if (value < 0) throw new RangeError("a bucket id is unpadded base64url");
  return value % shards;
}

/**
 * The name of the object holding the bucket `bucketId` of `name`'s ingress, scope and action. A global bucket's
 * objects (ingress `null`) are named alike by every ingress instance: on Cloudflare, one object wherever traffic enters.
 */
export function shardName({ ingress, scope, action }: Omit<BucketName, "key">, bucketId: string): string {
  return JSON.stringify([ingress, scope, action, shardIndex(bucketId)]);
}
