import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { BodyChannelRendezvous, type BodyChannelOutcome, type ChannelIo } from "../../../src/relay/body-channel-rendezvous.ts";
import { ResetCode } from "../../../src/relay/protocol.ts";

const LENGTH = 2048;
const WAIT_MS = 3000;

interface Body {
  readonly id: number;
  discarded: number;
  piped: number;
}
interface Sink {
  aborted: number;
  piped: number;
}

type Event =
  | { kind: "post"; length: number }
  | { kind: "head"; channel: boolean }
  | { kind: "answer" }
  | { kind: "fail" }
  | { kind: "timers" }
  | { kind: "pipe-done"; ok: boolean };

const events = fc.array(
  fc.oneof(
    fc.record({ kind: fc.constant("post" as const), length: fc.constantFrom(LENGTH, LENGTH + 1) }),
    fc.record({ kind: fc.constant("head" as const), channel: fc.boolean() }),
    fc.constant({ kind: "answer" as const }),
    fc.constant({ kind: "fail" as const }),
    fc.constant({ kind: "timers" as const }),
    fc.record({ kind: fc.constant("pipe-done" as const), ok: fc.boolean() }),
  ),
  { maxLength: 12 },
);

/**
 * One stream's rendezvous driven as EdgeStreams drives it, with a manual clock and pipes the test settles: a
 * head once, the answer once (after a head that announced a channel), a reset closes the stream and fails the
 * rendezvous, a closed stream's POSTs are refused before they reach it (404).
 */
function drive(script: Event[]) {
  const timers = new Map<number, () => void>();
  let nextTimer = 0;
  const pipes: Array<{ settle(ok: boolean): void; body: Body; sink: Sink }> = [];
  const io: ChannelIo<Body, Sink> = {
    timer: {
      set: (run, ms) => {
        expect(ms).toBe(WAIT_MS);
        timers.set(++nextTimer, run);
        return nextTimer;
      },
      clear: (handle) => timers.delete(handle as number),
    },
    waitMs: () => WAIT_MS,
    pipe(body, sink) {
      body.piped++;
      sink.piped++;
      let settle!: (ok: boolean) => void;
      const done = new Promise<void>((resolve, reject) => (settle = (ok) => (ok ? resolve() : reject(new Error("the POST broke off")))));
      pipes.push({ settle, body, sink });
      return { done, stop: () => settle(false) };
    },
    discard: (body) => void body.discarded++,
    abort: (sink) => void sink.aborted++,
  };
  const state = { closed: false, headSeen: false, announced: undefined as number | undefined, answered: false };
  const resets: Array<{ code: string; message: string }> = [];
  let finished = 0;
  const rendezvous: BodyChannelRendezvous<Body, Sink> = new BodyChannelRendezvous(7, io, {
    reset: (code, message) => {
      if (state.closed) return;
      resets.push({ code, message });
      state.closed = true;
      rendezvous.fail(message);
    },
    finished: () => {
      finished++;
      state.closed = true;
    },
  });
  const posts: Array<{ body: Body; length: number; outcome?: BodyChannelOutcome }> = [];
  const sinks: Sink[] = [];
  for (const event of script) {
    if (event.kind === "post") {
      const post: (typeof posts)[number] = { body: { id: posts.length, discarded: 0, piped: 0 }, length: event.length };
      posts.push(post);
      if (state.closed) {
        // EdgeStreams refuses it, and cancels its body, before the rendezvous sees it
        post.body.discarded++;
        post.outcome = { ok: false, status: 404, message: "stream 7 is not open on this session" };
      } else void rendezvous.post(post.body, post.length).then((outcome) => (post.outcome = outcome));
    } else if (event.kind === "head" && !state.headSeen && !state.closed) {
      state.headSeen = true;
      state.announced = event.channel ? LENGTH : undefined;
      rendezvous.head(state.announced);
    } else if (event.kind === "answer" && state.announced !== undefined && !state.answered && !state.closed) {
      state.answered = true;
      const sink = { aborted: 0, piped: 0 };
      sinks.push(sink);
      rendezvous.answered(sink);
    } else if (event.kind === "fail" && !state.closed) {
      state.closed = true;
      rendezvous.fail("the agent reset the stream");
    } else if (event.kind === "timers") {
      const due = [...timers.values()];
      timers.clear();
      for (const run of due) run();
    } else if (event.kind === "pipe-done") {
      pipes.shift()?.settle(event.ok);
    }
  }
  return { rendezvous, state, timers, pipes, posts, sinks, resets, finished: () => finished };
}

const settled = () => new Promise((resolve) => setImmediate(resolve));

describe("body-channel rendezvous: a head and a POST in any order, with resets and timeouts at any point", () => {
  it("every POST is answered once, every body is used or let go exactly once, and no timer outlives the rendezvous", async () => {
    await fc.assert(
      fc.asyncProperty(events, async (script) => {
        const run = drive(script);
        // the stream ends (if it has not): everything still waiting is let go
        if (!run.state.closed) {
          run.state.closed = true;
          run.rendezvous.fail("the session is gone");
        }
        for (const pipe of run.pipes.splice(0)) pipe.settle(true);
        await settled();
        expect(run.timers.size).toBe(0);
        for (const post of run.posts) {
          expect(post.outcome).toBeDefined();
          expect(post.body.discarded + post.body.piped).toBe(1);
          if (post.outcome?.ok) expect(post.body.piped).toBe(1);
        }
        for (const sink of run.sinks) expect(sink.aborted + sink.piped).toBeLessThanOrEqual(1);
        expect(run.posts.filter((post) => post.body.piped === 1).length).toBeLessThanOrEqual(1);
        expect(run.finished()).toBe(run.posts.filter((post) => post.outcome?.ok).length);
      }),
      { numRuns: 1000 },
    );
  });

  it("a body gets through only when the head announced its length, the client was answered and the pipe finished", async () => {
    await fc.assert(
      fc.asyncProperty(events, async (script) => {
        const run = drive(script);
        await settled();
        const ok = run.posts.filter((post) => post.outcome?.ok);
        if (ok.length === 0) return;
        expect(ok).toHaveLength(1);
        expect(ok[0].length).toBe(LENGTH);
        expect(run.state.announced).toBe(LENGTH);
        expect(run.state.answered).toBe(true);
        expect(run.resets).toEqual([]);
      }),
      { numRuns: 1000 },
    );
  });

  it("a head or a POST left waiting past the wait resets the stream with protocol_error, naming which did not arrive", async () => {
    const early = drive([{ kind: "post", length: LENGTH }, { kind: "timers" }]);
    await settled();
    expect(early.resets).toEqual([{ code: ResetCode.protocolError, message: "the response head of a body channel's POST did not arrive within 3 s" }]);
    expect(early.posts[0].outcome).toEqual({ ok: false, status: 409, message: "the response head of a body channel's POST did not arrive within 3 s" });
    expect(early.posts[0].body.discarded).toBe(1);

    const announced = drive([{ kind: "head", channel: true }, { kind: "answer" }, { kind: "timers" }]);
    expect(announced.resets).toEqual([{ code: ResetCode.protocolError, message: "the announced body channel did not arrive within 3 s" }]);
    expect(announced.sinks[0].aborted).toBe(1);
  });

  it("a POST whose length is not the head's is refused 409 and resets the stream; a second POST is refused 409", async () => {
    const run = drive([{ kind: "head", channel: true }, { kind: "post", length: LENGTH + 1 }, { kind: "post", length: LENGTH }, { kind: "answer" }]);
    await settled();
    const mismatch = `the body channel's POST carries ${LENGTH + 1} bytes, the response head announced ${LENGTH}`;
    expect(run.posts.map((post) => post.outcome)).toEqual([
      { ok: false, status: 409, message: mismatch },
      { ok: false, status: 409, message: "stream 7 already has its body channel" },
    ]);
    expect(run.resets).toEqual([{ code: ResetCode.protocolError, message: mismatch }]);
    expect(run.sinks[0]).toEqual({ aborted: 1, piped: 0 });
  });

  it("a POST for a stream whose head announced none is refused 409, and a POST that broke off resets the stream, cancelled", async () => {
    const none = drive([
      { kind: "post", length: LENGTH },
      { kind: "head", channel: false },
    ]);
    await settled();
    expect(none.posts[0].outcome).toEqual({ ok: false, status: 409, message: "stream 7 was not announced with a body channel" });

    const broke = drive([{ kind: "head", channel: true }, { kind: "post", length: LENGTH }, { kind: "answer" }, { kind: "pipe-done", ok: false }]);
    await settled();
    expect(broke.resets).toEqual([{ code: ResetCode.cancelled, message: "the response body broke off: the POST broke off" }]);
    expect(broke.posts[0].outcome).toEqual({ ok: false, status: 409, message: "the response body broke off: the POST broke off" });
  });
});
