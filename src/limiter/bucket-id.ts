/** Fixed-size ids of rate-limit buckets: whatever a client puts in a bucket key, 43 characters name its state. */

export interface BucketName {
  /** The ingress instance counting the bucket; `null` for a global bucket (`scope: global`), one for every instance. */
  readonly ingress: string | null;
  readonly scope: string;
  readonly action: string;
  readonly key: string;
}

const encoder = new TextEncoder();

/** The text a bucket's id is the hash of: its parts, unambiguously joined (a global bucket's ingress is JSON `null`, which no instance's name is). */
export function bucketText({ ingress, scope, action, key }: BucketName): string {
  return JSON.stringify([ingress, scope, action, key]);
}

/** SHA-256 of `bucketText`, in unpadded base64url (43 characters). */
export async function idOfText(text: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", encoder.encode(text)));
  return btoa(String.fromCharCode(...digest))
    .replace(/\+/g, "-")
    .replace(/\//g, "_")
    .replace(/=+$/, "");
}

/** SHA-256 of the bucket's parts, in unpadded base64url (43 characters). */
export function bucketId(name: BucketName): Promise<string> {
  return idOfText(bucketText(name));
}
