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

/**
 * The stream's text when it is at most `limit` bytes, else undefined: the stream is then cancelled at once, so
 * nothing past the bound is read. A stream that breaks off throws.
 */
export async function textWithin(body: ReadableStream<Uint8Array>, limit: number): Promise<string | undefined> {
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel();
      return undefined;
    }
    chunks.push(value);
  }
  return new TextDecoder().decode(joinChunks(chunks, size));
}
