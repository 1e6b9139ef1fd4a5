/**
 * V8 flags for a bench's workerd (e.g. `--max-heap-size=128`, the 128 MB an isolate has on Cloudflare). workerd
 * reads them from its config's top-level `v8Flags` (node_modules/workerd/workerd.capnp: `Config.v8Flags @2`) and
 * sets them before V8 starts, so they hold for every isolate of the process; Miniflare never fills that field
 * and has no option for it. So the Miniflare runtime's `updateConfig` is wrapped, once per process: the binary
 * config of a Miniflare registered here gets the flags written into its (empty) `v8Flags` pointer before it goes
 * to workerd; any other Miniflare's config passes unchanged.
 */

import { Runtime } from "miniflare";

/** Flags by a string that names one Miniflare's config (a fresh persist directory), to be found in its bytes. */
const registered = new Map<string, { readonly flags: readonly string[]; applied: boolean }>();
let wrapped = false;

/**
 * Has the workerd started by the Miniflare whose config contains `marker` run with `flags` set in V8 (hostWorker
 * passes the Durable Objects' persist directory, a fresh temporary directory: Miniflare's options are copied
 * through zod, so no object given to it is seen again by identity). Call the returned function once workerd is
 * up: it forgets the marker and says whether the flags went into a config.
 */
export function withV8Flags(marker: string, flags: readonly string[]): () => boolean {
  if (!wrapped) {
    wrapped = true;
    const original = Runtime.prototype.updateConfig;
    Runtime.prototype.updateConfig = function (configBuffer, ...rest) {
      const entry = [...registered].find(([key]) => configBuffer.includes(key))?.[1];
      if (entry) entry.applied = true;
      return original.call(this, entry ? addV8Flags(configBuffer, entry.flags) : configBuffer, ...rest);
    };
  }
  const entry = { flags, applied: false };
  registered.set(marker, entry);
  return () => {
    registered.delete(marker);
    return entry.applied;
  };
}

const WORD = 8;
/** `Config.v8Flags` is the root struct's third pointer (`@2`, after `services` and `sockets`). */
const V8_FLAGS_POINTER = 2;
const LIST_OF_POINTERS = 6;
const LIST_OF_BYTES = 2;

/**
 * The same unpacked Cap'n Proto message of a workerd `Config`, its `v8Flags` set to `flags`: the list and its
 * texts appended to the end of segment 0 (offsets inside a segment are relative, so the segments after it, if
 * any, stay valid where they move to). Throws if the message already sets `v8Flags` or is not laid out as
 * Miniflare's encoder lays it out (the root a struct pointer into segment 0).
 */
function addV8Flags(message: Uint8Array, flags: readonly string[]): Buffer {
  const input = new DataView(message.buffer, message.byteOffset, message.byteLength);
  const segments = input.getUint32(0, true) + 1;
  const tableBytes = Math.ceil((4 + 4 * segments) / WORD) * WORD;
  const segment0Words = input.getUint32(4, true);
  const word = (index: number) => tableBytes + index * WORD;
  const rootLow = input.getUint32(word(0), true);
  if ((rootLow & 3) !== 0) throw new Error("workerd config: the root pointer is not a struct pointer into segment 0");
  const rootHigh = input.getUint32(word(0) + 4, true);
  const rootStart = 1 + (rootLow >> 2);
  const [dataWords, pointerWords] = [rootHigh & 0xffff, rootHigh >>> 16];
  if (pointerWords <= V8_FLAGS_POINTER) throw new Error(`workerd config: the root struct has ${pointerWords} pointers, no v8Flags`);
  const slot = rootStart + dataWords + V8_FLAGS_POINTER;
  if (input.getUint32(word(slot), true) !== 0 || input.getUint32(word(slot) + 4, true) !== 0)
    throw new Error("workerd config: v8Flags is set already; merge the flags instead");

  const texts = flags.map((flag) => new TextEncoder().encode(`${flag}\0`));
  const textWords = texts.map((bytes) => Math.ceil(bytes.length / WORD));
  const addedWords = flags.length + textWords.reduce((sum, n) => sum + n, 0);
  const output = Buffer.alloc(message.byteLength + addedWords * WORD);
  const end0 = word(segment0Words);
  output.set(message.subarray(0, end0), 0);
  output.set(message.subarray(end0), end0 + addedWords * WORD);
  const view = new DataView(output.buffer, output.byteOffset, output.byteLength);
  view.setUint32(4, segment0Words + addedWords, true);
  /** A list pointer at word `at` to `count` elements of `size` starting at word `target`. */
  const listPointer = (at: number, target: number, size: number, count: number) => {
    view.setUint32(word(at), ((target - at - 1) << 2) | 1, true);
    view.setUint32(word(at) + 4, size | (count << 3), true);
  };
  const list = segment0Words;
  listPointer(slot, list, LIST_OF_POINTERS, flags.length);
  let text = list + flags.length;
  texts.forEach((bytes, i) => {
    listPointer(list + i, text, LIST_OF_BYTES, bytes.length);
    output.set(bytes, word(text));
    text += textWords[i]!;
  });
  return output;
}
