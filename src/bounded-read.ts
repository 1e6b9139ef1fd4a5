/**
 * Reading a body whole only while it stays within a bound, for the places that must hold one in memory (a
 * response body a settle reads, a JWKS document, a request body an action verifies).
 */

/** `chunks` (whose lengths add up to `size`) as one array. */
export function joinChunks(chunks: readonly Uint8Array[], size: number): Uint8Array<ArrayBuffer> {
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return bytes;
}

/** Memory a read takes as its chunks arrive (a hold of the isolate's body budget, src/policy/body-budget.ts). */
export interface ReadAllowance {
  /** True when the read may hold `bytes` in all; false: it may not, and must stop. */
  cover(bytes: number): boolean;
  release(): void;
}

/** A bounded read: the bytes, or why not (past `limit`; or `busy`: the allowance refused the memory). */
export type BoundedBytes = { readonly ok: true; readonly bytes: Uint8Array<ArrayBuffer> } | { readonly ok: false; readonly why: "too-large" | "busy" };

/** The next chunk; when `idleMs` is given, one that does not come within it breaks the read off (throws). */
export async function nextChunk(reader: ReadableStreamDefaultReader<Uint8Array>, idleMs?: number): Promise<ReadableStreamReadResult<Uint8Array>> {
  if (idleMs === undefined) return reader.read();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const silent = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`nothing arrived for ${idleMs / 1000} s`)), idleMs);
  });
  try {
    return await Promise.race([reader.read(), silent]);
  } finally {
    if (timer !== undefined) clearTimeout(timer);
  }
}

/**
 * The stream's bytes when they are at most `limit` and `allowance` (if any) covers them as they arrive; else the
 * stream is cancelled at once, so nothing past the bound is read. The allowance is released when the read ends,
 * however it ends. A stream that breaks off, or sends nothing for `idleMs` (when given), throws.
 */
export async function bytesWithin(body: ReadableStream<Uint8Array>, limit: number, allowance?: ReadAllowance, idleMs?: number): Promise<BoundedBytes> {
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for (;;) {
      const { done, value } = await nextChunk(reader, idleMs).catch(async (error: unknown) => {
        await reader.cancel(error).catch(() => {});
        throw error;
      });
      if (done) break;
      size += value.byteLength;
      const why = size > limit ? "too-large" : allowance && !allowance.cover(size) ? "busy" : undefined;
      if (why) {
        await reader.cancel();
        return { ok: false, why };
      }
      chunks.push(value);
    }
    return { ok: true, bytes: joinChunks(chunks, size) };
  } finally {
    allowance?.release();
  }
}

/**
 * The stream's text when it is at most `limit` bytes, else undefined: the stream is then cancelled at once, so
 * nothing past the bound is read. A stream that breaks off throws.
 */
export async function textWithin(body: ReadableStream<Uint8Array>, limit: number): Promise<string | undefined> {
  const read = await bytesWithin(body, limit);
  return read.ok ? new TextDecoder().decode(read.bytes) : undefined;
}
