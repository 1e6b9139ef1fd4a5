/**
 * One stream's body channel at the edge (protocol.ts, "Body channels"), as a state machine: the agent's
 * response head may announce that the body comes through a channel, and the agent's POST carries it. Either
 * may arrive first, and each waits for the other at most `waitMs`; once both are there and the public client
 * has been answered, the POST's body is piped into the client's response. Pure: the bodies, the client's
 * sink, the pipe and the timer are the adapter's (workerd streams at the edge, plain values in Node tests).
 */

import { ResetCode } from "./protocol.ts";

/** What a body channel's POST is answered: the body got through, or why not (an HTTP status and a message). */
export type BodyChannelOutcome = { readonly ok: true } | { readonly ok: false; readonly status: number; readonly message: string };

/** A clock's timers, injected: setTimeout/clearTimeout at the edge, a manual clock in tests. */
export interface ChannelTimer {
  set(run: () => void, ms: number): unknown;
  clear(handle: unknown): void;
}

/** The adapter's side of every stream's rendezvous. */
export interface ChannelIo<Body, Sink> {
  readonly timer: ChannelTimer;
  /** How long a head and a POST wait for each other. */
  waitMs(): number;
  /** Pipes `body` into `sink`: `done` settles once the sink took all of it, or rejects with why not; `stop` ends it early. */
  pipe(body: Body, sink: Sink): { done: Promise<void>; stop(reason: string): void };
  /** A POST's body that will not be used. */
  discard(body: Body): void;
  /** The client's sink when its body will not come. */
  abort(sink: Sink, reason: string): void;
}

/** What one rendezvous asks of its stream. */
export interface ChannelEvents {
  /** The stream must be reset: the rendezvous failed, or the body broke off. */
  reset(code: string, message: string): void;
  /** The whole body went through: the stream is done. */
  finished(): void;
}

interface Post<Body> {
  readonly body: Body;
  readonly length: number;
  readonly settle: (outcome: BodyChannelOutcome) => void;
}

type State<Body, Sink> =
  | { readonly kind: "waiting" }
  | { readonly kind: "post-first"; readonly post: Post<Body>; readonly timer: unknown }
  | { readonly kind: "no-channel" }
  | { readonly kind: "announced"; readonly length: number; readonly timer: unknown; sink?: Sink }
  | { readonly kind: "joined"; readonly length: number; readonly post: Post<Body> }
  | { readonly kind: "piping"; readonly post: Post<Body>; readonly stop: (reason: string) => void; stopped?: string }
  | { readonly kind: "over" };

const refusal = (status: number, message: string): BodyChannelOutcome => ({ ok: false, status, message });

export class BodyChannelRendezvous<Body, Sink> {
  private state: State<Body, Sink> = { kind: "waiting" };

  constructor(
    private readonly stream: number,
    private readonly io: ChannelIo<Body, Sink>,
    private readonly events: ChannelEvents,
  ) {}

  /** The head announced a channel: no data frames may follow for this stream. */
  get announced(): boolean {
    return this.state.kind === "announced" || this.state.kind === "joined" || this.state.kind === "piping";
  }

  /** The agent's POST of `length` bytes (its content-length) for this stream; resolves with what it is answered. */
  post(body: Body, length: number): Promise<BodyChannelOutcome> {
    const state = this.state;
    const refuse = (status: number, message: string) => {
      this.io.discard(body);
      return Promise.resolve(refusal(status, message));
    };
    switch (state.kind) {
      case "over":
        return refuse(404, `stream ${this.stream} is not open on this session`);
      case "post-first":
      case "joined":
      case "piping":
        return refuse(409, `stream ${this.stream} already has its body channel`);
      case "no-channel":
        return refuse(409, `stream ${this.stream} was not announced with a body channel`);
      case "waiting":
        return new Promise((settle) => {
          // The POST overtook the head's message; the head decides.
          const timer = this.wait(`the response head of a body channel's POST did not arrive within ${this.io.waitMs() / 1000} s`, "post-first");
          this.state = { kind: "post-first", post: { body, length, settle }, timer };
        });
      case "announced":
        return new Promise((settle) => {
          this.io.timer.clear(state.timer);
          this.state = { kind: "joined", length: state.length, post: { body, length, settle } };
          if (state.sink !== undefined) this.pipe(state.sink);
        });
    }
  }

  /** The response head arrived: `length` is the body it announced for a channel, undefined when it announced none. */
  head(length: number | undefined): void {
    const state = this.state;
    if (state.kind === "waiting") {
      if (length === undefined) this.state = { kind: "no-channel" };
      else
        this.state = {
          kind: "announced",
          length,
          timer: this.wait(`the announced body channel did not arrive within ${this.io.waitMs() / 1000} s`, "announced"),
        };
    } else if (state.kind === "post-first") {
      this.io.timer.clear(state.timer);
      if (length !== undefined) {
        this.state = { kind: "joined", length, post: state.post };
        return;
      }
      this.state = { kind: "no-channel" };
      state.post.settle(refusal(409, `stream ${this.stream} was not announced with a body channel`));
      this.io.discard(state.post.body);
    }
  }

  /** The public client was answered: `sink` is its response body, which takes the announced length. */
  answered(sink: Sink): void {
    const state = this.state;
    if (state.kind === "announced") state.sink = sink;
    else if (state.kind === "joined") this.pipe(sink);
  }

  /** The stream ended early: whatever waits is let go, a POST answered 409 with `message`. */
  fail(message: string): void {
    const state = this.state;
    switch (state.kind) {
      case "post-first":
        this.state = { kind: "over" };
        this.io.timer.clear(state.timer);
        this.io.discard(state.post.body);
        return state.post.settle(refusal(409, message));
      case "announced":
        this.state = { kind: "over" };
        this.io.timer.clear(state.timer);
        if (state.sink !== undefined) this.io.abort(state.sink, message);
        return;
      case "joined":
        this.state = { kind: "over" };
        this.io.discard(state.post.body);
        return state.post.settle(refusal(409, message));
      case "piping":
        // the pipe's failure answers the POST, with this message
        if (state.stopped === undefined) {
          state.stopped = message;
          state.stop(message);
        }
        return;
      default:
        this.state = { kind: "over" };
    }
  }

  /** A timer that resets the stream if the rendezvous is still in `kind` when it fires. */
  private wait(message: string, kind: "post-first" | "announced"): unknown {
    return this.io.timer.set(() => {
      if (this.state.kind === kind) this.events.reset(ResetCode.protocolError, message);
    }, this.io.waitMs());
  }

  private pipe(sink: Sink): void {
    const state = this.state;
    if (state.kind !== "joined") return;
    const { post, length } = state;
    if (post.length !== length) {
      const message = `the body channel's POST carries ${post.length} bytes, the response head announced ${length}`;
      this.state = { kind: "over" };
      this.io.discard(post.body);
      this.events.reset(ResetCode.protocolError, message);
      this.io.abort(sink, message);
      return post.settle(refusal(409, message));
    }
    const { done, stop } = this.io.pipe(post.body, sink);
    const piping: State<Body, Sink> & { kind: "piping" } = { kind: "piping", post, stop };
    this.state = piping;
    done.then(
      () => {
        this.state = { kind: "over" };
        this.events.finished();
        post.settle({ ok: true });
      },
      (error: unknown) => {
        const message = piping.stopped ?? `the response body broke off: ${error instanceof Error ? error.message : String(error)}`;
        this.state = { kind: "over" };
        this.events.reset(ResetCode.cancelled, message);
        post.settle(refusal(409, message));
      },
    );
  }
}
