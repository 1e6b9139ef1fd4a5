/** The relay protocol's surface: frames, their codec, the protocol's constants, and HTTP semantics. */

export * from "./frame-codec.ts";
export * from "./edge-decision.ts";
export * from "./frames.ts";
export * from "./head-bounds.ts";
export * from "./http-semantics.ts";
export * from "./protocol.ts";
