/**
 * A captured header list kept as one byte array rather than an array of pairs of strings (which costs
 * V8 about 100 bytes per header besides the characters). Each name and value is a varint of
 * `length << 1 | wide` and its characters: one byte each when all are Latin-1, else two (UTF-16 code
 * units), as V8 itself would store that string, so nothing is lost (lone surrogates included) and the
 * size is the characters' own. The list is rebuilt on demand, for a view or a replay.
 */

import type { HeaderList } from "./http-message.ts";
import { TYPED_ARRAY_BYTES } from "./retained-size.ts";

/** A block besides its bytes: its typed array, and this object around it (measured: 268 together). */
const HEADER_BLOCK_BYTES = TYPED_ARRAY_BYTES + 32;

const WIDE = /[^\x00-\xff]/;

function varintBytes(value: number): number {
  let bytes = 1;
  while (value >= 0x80) {
    value = Math.floor(value / 0x80);
    bytes++;
  }
  return bytes;
}

/** The varint before a string's characters: its length, and whether they are two bytes each. */
const prefixOf = (text: string, wide: boolean) => text.length * 2 + (wide ? 1 : 0);

function packedBytes(text: string): number {
  const wide = WIDE.test(text);
  return varintBytes(prefixOf(text, wide)) + text.length * (wide ? 2 : 1);
}

export class HeaderBlock {
  private constructor(private readonly bytes: Uint8Array) {}

  static of(headers: HeaderList): HeaderBlock {
    let size = 0;
    for (const [name, value] of headers) size += packedBytes(name) + packedBytes(value);
    // A Buffer over an ArrayBuffer of its own: Buffer.allocUnsafe of a few KiB would be a slice of a shared pool.
    const buffer = Buffer.from(new ArrayBuffer(size));
    let offset = 0;
    const put = (text: string) => {
      const wide = WIDE.test(text);
      for (let prefix = prefixOf(text, wide); ; prefix = Math.floor(prefix / 0x80)) {
        buffer[offset++] = prefix >= 0x80 ? (prefix & 0x7f) | 0x80 : prefix;
        if (prefix < 0x80) break;
      }
      offset += buffer.write(text, offset, wide ? "utf16le" : "latin1");
    };
    for (const [name, value] of headers) {
      put(name);
      put(value);
    }
    return new HeaderBlock(new Uint8Array(buffer.buffer));
  }

  /** Bytes of the packed characters and lengths. */
  get byteLength(): number {
    return this.bytes.byteLength;
  }

  /** What the block holds in memory. */
  get retainedBytes(): number {
    return HEADER_BLOCK_BYTES + this.bytes.byteLength;
  }

  /** The headers in the order they came, repeated names kept. */
  list(): Array<[string, string]> {
    const buffer = Buffer.from(this.bytes.buffer, this.bytes.byteOffset, this.bytes.byteLength);
    let offset = 0;
    const take = () => {
      let prefix = 0;
      for (let scale = 1; ; scale *= 0x80) {
        const byte = buffer[offset++];
        prefix += (byte & 0x7f) * scale;
        if (byte < 0x80) break;
      }
      const length = Math.floor(prefix / 2);
      const wide = prefix % 2 === 1;
      const end = offset + length * (wide ? 2 : 1);
      const text = buffer.toString(wide ? "utf16le" : "latin1", offset, end);
      offset = end;
      return text;
    };
    const headers: Array<[string, string]> = [];
    while (offset < buffer.length) headers.push([take(), take()]);
    return headers;
  }
}
