/**
 * `log` (as ngrok's): writes one structured JSON line per execution with the configured `metadata`. String
 * values may interpolate variables, `${actions.svc.rate_limit.limited}`: the names are checked at load;
 * a value that is one variable alone keeps its type (a boolean stays a boolean). What one request may log is
 * bounded by its EvaluationBudget: values are cut while they are put together, never joined in full first,
 * and a record past the budget is dropped (counted in the next record the request writes).
 */

import { z } from "zod";
import type { Exchange, Phase } from "../exchange.ts";
import { defineAction } from "./action.ts";

/** Keys of one `metadata` map. */
export const MAX_LOG_METADATA_KEYS = 16;
/** Characters of a metadata key. */
export const MAX_LOG_KEY_CHARS = 64;
/** Characters of a metadata value, as written and after interpolation (longer values are cut). */
export const MAX_LOG_VALUE_CHARS = 1024;

/** Characters the sink adds to every record: the event name and the ingress (cut at 256 characters). */
const LOG_RECORD_OVERHEAD = 320;

type Scalar = string | number | boolean;

/** The variables a value may interpolate, and the phase each is readable in. */
const VARIABLES: Readonly<Record<string, { readonly read: (exchange: Exchange) => Scalar; readonly outboundOnly?: boolean }>> = {
  "req.method": { read: (exchange) => exchange.request.method },
  "req.host": { read: (exchange) => exchange.request.host },
  "req.url.path": { read: (exchange) => exchange.request.url.pathname },
  "req.url.query": { read: (exchange) => exchange.request.url.search.replace(/^\?/, "") },
  "req.url.raw": { read: (exchange) => exchange.request.url.pathname + exchange.request.url.search },
  "conn.client_ip": { read: (exchange) => exchange.clientIp },
  "res.status_code": { read: (exchange) => exchange.response?.status ?? 0, outboundOnly: true },
  "actions.svc.rate_limit.bucket_key": { read: (exchange) => exchange.vars.rate_limit.bucket_key },
  "actions.svc.rate_limit.limited": { read: (exchange) => exchange.vars.rate_limit.limited },
  "actions.svc.rate_limit.error.code": { read: (exchange) => exchange.vars.rate_limit.error.code },
  "actions.svc.rate_limit.error.message": { read: (exchange) => exchange.vars.rate_limit.error.message },
  "actions.svc.restrict_ips.denied": { read: (exchange) => exchange.vars.restrict_ips.denied },
};

const PLACEHOLDER = /\$\{([^}]*)\}/g;

/** What is wrong with the variables a template names in `phase`, if anything. */
function templateProblem(template: string, phase: Phase): string | undefined {
  for (const [, inner] of template.matchAll(PLACEHOLDER)) {
    const name = inner.trim();
    const variable = VARIABLES[name];
    if (!variable) return `unknown variable '${name}' in \${…} (expected one of ${Object.keys(VARIABLES).join(", ")})`;
    if (variable.outboundOnly && phase === "inbound") return `${name} is only available in outbound`;
  }
  return undefined;
}

/** One metadata value, compiled: a literal, one variable, or a template; at most `max` characters of it. */
type CompiledValue = (exchange: Exchange, max: number) => Scalar;

function compileValue(value: Scalar): CompiledValue {
  if (typeof value !== "string") return () => value;
  if (!value.includes("${")) return (_exchange, max) => clip(value, max);
  const alone = /^\$\{([^}]*)\}$/.exec(value);
  if (alone) {
    const read = VARIABLES[alone[1].trim()].read;
    return (exchange, max) => clip(read(exchange), max);
  }
  const parts = value.split(PLACEHOLDER).map((part, index) => (index % 2 === 0 ? () => part : VARIABLES[part.trim()].read));
  return (exchange, max) => {
    let joined = "";
    for (const read of parts) {
      if (joined.length >= max) break;
      joined += String(read(exchange)).slice(0, max - joined.length);
    }
    return joined;
  };
}

function clip(value: Scalar, max: number): Scalar {
  return typeof value === "string" && value.length > max ? value.slice(0, max) : value;
}

/**
 * The record's metadata within the request's log budget: each value cut to what is left before it is put
 * together, keys that no longer fit left out (`truncated`); undefined when not even one fits.
 */
function metadataWithin(
  values: ReadonlyArray<readonly [string, CompiledValue]>,
  exchange: Exchange,
  overhead: number,
): { metadata: Record<string, Scalar>; truncated: boolean } | undefined {
  // the record's other fields (the metadata's braces among them)
  let left = exchange.budget.logBytesLeft() - overhead;
  const metadata: Record<string, Scalar> = {};
  let written = 0;
  for (const [key, read] of values) {
    // quotes, colon and comma around the key, and the quotes of a string value
    const room = left - (key.length + 6);
    if (room <= 0) return written > 0 ? { metadata, truncated: true } : undefined;
    const value = read(exchange, Math.min(MAX_LOG_VALUE_CHARS, room));
    metadata[key] = value;
    written++;
    left -= key.length + 6 + (typeof value === "string" ? value.length : String(value).length);
  }
  return { metadata, truncated: false };
}

const metadataValue = z.union([z.string().max(MAX_LOG_VALUE_CHARS, `must be at most ${MAX_LOG_VALUE_CHARS} characters`), z.number(), z.boolean()], {
  error: "must be a string, number or boolean",
});

export const logConfig = z.strictObject({
  metadata: z
    .record(
      z
        .string()
        .max(MAX_LOG_KEY_CHARS, `must be at most ${MAX_LOG_KEY_CHARS} characters`)
        .regex(/^[A-Za-z_][A-Za-z0-9_.-]*$/, "must be a letter or _ followed by letters, digits, _, . or -"),
      metadataValue,
      { error: "must be a map of names to values" },
    )
    .refine((metadata) => Object.keys(metadata).length >= 1, "must have at least 1 key")
    .refine((metadata) => Object.keys(metadata).length <= MAX_LOG_METADATA_KEYS, `exceeds the limit of ${MAX_LOG_METADATA_KEYS} keys`)
    .describe("What to log: names to strings (which may interpolate ${variables}), numbers or booleans."),
});

export const logAction = defineAction({
  type: "log",
  config: logConfig,
  configOptional: false,
  check(config, { phase }) {
    for (const [key, value] of Object.entries(config.metadata)) {
      const problem = typeof value === "string" ? templateProblem(value, phase) : undefined;
      if (problem) return { path: ["metadata", key], message: problem };
    }
    return undefined;
  },
  compile(config, context) {
    const values = Object.entries(config.metadata).map(([key, value]) => [key, compileValue(value)] as const);
    return {
      type: "log",
      run(exchange, { decisions }) {
        const { budget } = exchange;
        const dropped = budget.droppedLogRecords;
        const head = { route: exchange.scope, action: context.position, phase: context.phase, ...(dropped > 0 ? { dropped_before: dropped } : {}) };
        const overhead = JSON.stringify({ ...head, metadata: {}, truncated: true }).length + LOG_RECORD_OVERHEAD;
        const within = metadataWithin(values, exchange, overhead);
        const record = within && { ...head, metadata: within.metadata, ...(within.truncated ? { truncated: true } : {}) };
        // The whole record counts, as written: its fields, the metadata as JSON, what the sink adds.
        if (!record || !budget.takeLogBytes(JSON.stringify(record).length + LOG_RECORD_OVERHEAD)) {
          budget.droppedLogRecords++;
          return undefined;
        }
        budget.droppedLogRecords = 0;
        if (decisions) decisions.log(record);
        else console.log(JSON.stringify({ event: "traffic_policy.log", ...record }));
        return undefined;
      },
    };
  },
});
