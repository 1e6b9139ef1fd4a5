/** What one family of CEL variables provides: the names it declares, their types, and how each is read. */

import type { Type } from "../cel-types.ts";
import type { Exchange } from "../exchange.ts";

/** Reads one variable from the exchange; called at most once per bindings snapshot, and only when an expression reads it. */
export type Reader = (exchange: Exchange) => unknown;

export interface VariableFamily {
  /**
   * Names as expressions resolve them: a top-level variable (`req`) or a hidden one (`@req.url`) that
   * rewrite.ts substitutes for a chain of fields, so that reading it costs only when an expression reads it.
   */
  readonly types: Readonly<Record<string, Type>>;
  readonly readers: Readonly<Record<string, Reader>>;
  /** Readable only once the response is there. */
  readonly outboundOnly?: boolean;
}

/** A value every request has, whatever the platform: an empty string stands for an absent one. */
export function orEmpty(value: unknown): string {
  return typeof value === "string" ? value : "";
}
