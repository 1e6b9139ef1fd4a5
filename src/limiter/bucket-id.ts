/** Fixed-size ids of rate-limit buckets: whatever a client puts in a bucket key, 43 characters name its state. */

export interface BucketName {
  readonly ingress: string;
  readonly scope: string;
  readonly action: string;
  readonly key: string;
}

const encoder = new TextEncoder();

/** SHA-256 of the bucket's parts, in unpadded base64url (43 characters). */
export async function bucketId({ ingress, scope, action, key }: BucketName): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", encoder.encode(JSON.stringify([ingress, scope, action, key]))));
  return btoa(String.fromCharCode(...digest)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}
