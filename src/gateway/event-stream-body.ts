/**
 * `res.body` of a streamed response (`text/event-stream`, as LLM APIs stream completions) for a rate-limit's
 * `settle_cost`: the `data` of its events that are JSON objects, merged key by key at the top level, a later
 * event's value replacing an earlier one's. OpenAI's last chunk carries `usage`, so `res.body.usage` is it;
 * Anthropic's `message_start` carries `message` and its `message_delta` carries `usage`, so both are there.
 * Other data (`[DONE]`, text, garbage) is skipped. Read to the stream's end within bounds; past any bound, or
 * when the stream breaks off, the branch is cancelled and `res.body` is absent (the estimate stays).
 */

import { createParser, type ParseError } from "eventsource-parser";
import { jsonBodyValue, MAX_SETTLE_BODY_BYTES } from "../policy/variables/response-body.ts";

/** Bytes a settle reads of an event stream: an LLM stream is long (about 230 bytes a token for OpenAI's chunks). */
export const MAX_SETTLE_STREAM_BYTES = 8 * 1024 * 1024;
/** Events with data a settle reads of one stream. */
export const MAX_SETTLE_STREAM_EVENTS = 100_000;
/** Characters of one event's data (the parser's buffer for the event being read is held to this too). */
export const MAX_SETTLE_EVENT_CHARS = MAX_SETTLE_BODY_BYTES;
/** Characters of event data the merge holds: the events it still takes a value from, added up. */
export const MAX_SETTLE_MERGED_CHARS = MAX_SETTLE_BODY_BYTES;

/** Whether a response's content type is an event stream. */
export function isEventStreamContentType(contentType: string | null): boolean {
  return (contentType ?? "").split(";")[0]!.trim().toLowerCase() === "text/event-stream";
}

/** What the settle sees: `res.body`'s CEL value, or why it is absent. */
export type StreamBody = { readonly value: unknown } | { readonly absent: string };

/**
 * The top-level merge of a stream's JSON-object events. What it holds is bounded by the data of the events it
 * still takes a value from: each key remembers its event, and an event no key takes a value from is let go.
 */
export class EventMerge {
  private readonly values = new Map<string, { readonly value: unknown; readonly event: number }>();
  /** Per event still referenced: its data's length and how many keys take their value from it. */
  private readonly events = new Map<number, { readonly chars: number; keys: number }>();
  private held = 0;
  private count = 0;

  /** Adds one event's data; returns why the body must be absent when a bound is passed, else undefined. */
  add(data: string): string | undefined {
    this.count += 1;
    if (this.count > MAX_SETTLE_STREAM_EVENTS) return `more than ${MAX_SETTLE_STREAM_EVENTS} events`;
    if (data.length > MAX_SETTLE_EVENT_CHARS) return `an event of more than ${MAX_SETTLE_EVENT_CHARS} characters`;
    // Only an object can be merged; `[DONE]` and text are skipped without parsing.
    if (data.trimStart()[0] !== "{") return undefined;
    let parsed: unknown;
    try {
      parsed = JSON.parse(data);
    } catch {
      return undefined;
    }
    if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) return undefined;
    const entries = Object.entries(parsed);
    if (entries.length === 0) return undefined;
    const event = this.count;
    this.events.set(event, { chars: data.length, keys: 0 });
    this.held += data.length;
    for (const [key, value] of entries) {
      const before = this.values.get(key);
      if (before) this.release(before.event);
      this.values.set(key, { value, event });
      this.events.get(event)!.keys += 1;
    }
    return this.held > MAX_SETTLE_MERGED_CHARS ? `merged events of more than ${MAX_SETTLE_MERGED_CHARS} characters` : undefined;
  }

  private release(event: number): void {
    const held = this.events.get(event)!;
    held.keys -= 1;
    if (held.keys > 0) return;
    this.events.delete(event);
    this.held -= held.chars;
  }

  /** The merged object as CEL values; absent when no event was a JSON object or it nests too deep. */
  result(): StreamBody {
    if (this.values.size === 0) return { absent: "no event's data is a JSON object" };
    const merged = Object.fromEntries([...this.values].map(([key, { value }]) => [key, value]));
    // Converted as a JSON body is (whole numbers as int, at most 32 levels): one conversion, of what is held.
    const value = jsonBodyValue(JSON.stringify(merged));
    return value === undefined ? { absent: "the merged events nest too deep" } : { value };
  }
}

/**
 * Reads `body` (a branch of the response's body nobody else reads) to its end and merges its events. Stops early,
 * cancelling the branch, past MAX_SETTLE_STREAM_BYTES, an event past its bound, or when `expired` settles (the
 * caller's clock: the reservation has expired, so nothing could settle any more). Never rejects.
 */
export async function eventStreamBody(body: ReadableStream<Uint8Array>, expired: Promise<void>): Promise<StreamBody> {
  const reader = body.getReader();
  const merge = new EventMerge();
  let stopped: string | undefined;
  const parser = createParser({
    maxBufferSize: MAX_SETTLE_EVENT_CHARS,
    onEvent: (event) => {
      stopped ??= merge.add(event.data);
    },
    onError: (error: ParseError) => {
      // Unknown fields and bad `retry` values are skipped, as a browser skips them; a buffer past its bound is not.
      if (error.type === "max-buffer-size-exceeded") stopped ??= `an event of more than ${MAX_SETTLE_EVENT_CHARS} characters`;
    },
  });
  let timedOut = false;
  // One reaction on `expired`, whatever the number of reads: cancelling ends the pending read as done.
  void expired.then(() => {
    timedOut = true;
    reader.cancel().catch(() => undefined);
  });
  const decoder = new TextDecoder();
  let read = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (timedOut) return { absent: "the stream outlasted its reservation" };
      if (done) break;
      read += value.byteLength;
      if (read > MAX_SETTLE_STREAM_BYTES) stopped = `a stream of more than ${MAX_SETTLE_STREAM_BYTES} bytes`;
      else parser.feed(decoder.decode(value, { stream: true }));
      if (stopped !== undefined) {
        await reader.cancel().catch(() => undefined);
        return { absent: stopped };
      }
    }
  } catch {
    return { absent: timedOut ? "the stream outlasted its reservation" : "the stream broke off" };
  }
  // An event not ended by a blank line when the stream ends is dropped, as the format says.
  parser.feed(decoder.decode());
  return stopped === undefined ? merge.result() : { absent: stopped };
}
