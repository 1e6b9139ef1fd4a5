/**
 * The `bucket_key` of a `rate-limit` action, compiled once. The seed's four forms (`req.host`, `conn.client_ip`,
 * `req.headers['<name>']`, `getReqHeader('<Name>')`) read the request directly, with their exact meaning (an
 * absent header is '') and no CEL; any other element is a CEL expression yielding a string (an int, uint or bool
 * is written as CEL's `string()` writes it), evaluated per request within the request's CEL budget.
 */

import { isCelUint } from "@bufbuild/cel";
import { display, type Type } from "../cel-types.ts";
import { clientIpBucket } from "../client-ip-bucket.ts";
import type { CompiledValueExpression } from "../compiled-expression.ts";
import type { Exchange } from "../exchange.ts";
import type { ActionContext } from "./action.ts";

/** Longest value of one CEL element, in UTF-16 code units: a longer one fails like an evaluation error. */
export const MAX_KEY_ELEMENT_CHARS = 16_384;

/** Longest `error.message` of a failed element (its evaluation error may quote request data). */
export const MAX_KEY_ERROR_CHARS = 256;

/** `actions.svc.rate_limit.error.code` when an element of the key failed; the request is still counted. */
export const KEY_ERROR = "ERR_RATE_LIMIT_KEY";

/** The key of one request. */
export interface KeyValue {
  /** What names the bucket: the parts as JSON, a failed element as `null`, which no string value can name. */
  readonly name: string;
  /** As `actions.svc.rate_limit.bucket_key` shows it: the parts joined with ':', a failed element as ''. */
  readonly shown: string;
  /** Why the first failed element failed, when one did. */
  readonly error?: string;
}

export type CompiledBucketKey = (exchange: Exchange) => KeyValue;

type SeedReader = (exchange: Exchange) => string;

const SEED_FORMS: ReadonlyArray<[RegExp, (match: RegExpMatchArray) => SeedReader]> = [
  [/^req\.host$/, () => (exchange) => exchange.request.host],
  // Grouped: one bucket per IPv4 address, per IPv6 /64 (the CEL variable stays the exact address).
  [/^conn\.client_ip$/, () => (exchange) => clientIpBucket(exchange.clientIp)],
  [/^req\.headers\['([a-z0-9!#$%&*+.^_`|~-]+)'\]$/, ([, name]) => headerReader(name)],
  [/^getReqHeader\('([A-Za-z0-9!#$%&*+.^_`|~-]+)'\)$/, ([, name]) => headerReader(name)],
];

/** Headers whose value starts with an auth scheme, which is case-insensitive (RFC 9110 §11.1). */
const CREDENTIAL_HEADERS = new Set(["authorization", "proxy-authorization"]);

function headerReader(name: string): SeedReader {
  const lower = name.toLowerCase();
  if (!CREDENTIAL_HEADERS.has(lower)) return (exchange) => exchange.request.headers.get(lower) ?? "";
  return (exchange) => canonicalCredentials(exchange.request.headers.get(lower) ?? "");
}

/**
 * `Bearer k`, `bearer k` and `BEARER\tk` are one credential: as a bucket key the scheme is lower-cased and
 * the white space after it folded, so spelling variants of one key cannot open several buckets.
 */
export function canonicalCredentials(value: string): string {
  const match = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+)[ \t]+(.*)$/.exec(value.trim());
  return match ? `${match[1].toLowerCase()} ${match[2]}` : value;
}

function seedReader(element: string): SeedReader | undefined {
  for (const [pattern, reader] of SEED_FORMS) {
    const match = element.trim().match(pattern);
    if (match) return reader(match);
  }
  return undefined;
}

const KEY_SCALARS = new Set(["string", "int", "uint", "bool", "dyn"]);

/** Why an element of this type cannot name a bucket, or undefined when it can. */
function refusedType(type: Type): string | undefined {
  if (type.kind === "scalar" && KEY_SCALARS.has(type.name)) return undefined;
  const hint = type.kind === "list" ? " (take one element, such as [0])" : type.kind === "record" ? " (read one of its fields)" : "";
  return `must be a CEL expression yielding a string (or an int, uint or bool), and this one is ${display(type)}${hint}`;
}

/** A CEL value as key text, or why it is none. */
function keyText(value: unknown): string | { error: string } {
  let text: string;
  if (typeof value === "string") text = value;
  else if (typeof value === "bigint" || typeof value === "boolean") text = String(value);
  else if (isCelUint(value)) text = String(value.value);
  else if (value !== null && typeof value === "object" && "error" in value && typeof value.error === "string") return { error: value.error };
  else return { error: `yields no string, int, uint or bool (a ${value !== null && typeof value === "object" ? "list, map or message" : typeof value})` };
  if (text.length > MAX_KEY_ELEMENT_CHARS) return { error: `yields ${text.length} characters, more than ${MAX_KEY_ELEMENT_CHARS}` };
  return text;
}

type Element = { readonly seed: SeedReader } | { readonly expression: CompiledValueExpression };

/**
 * Compiles the elements for the context's phase; or the first one that cannot name a bucket, by its index and
 * why (a CEL syntax or type error, or a result that is no string, such as a list).
 */
export function compileBucketKey(
  elements: readonly string[],
  { phase, expressions }: Pick<ActionContext, "phase" | "expressions">,
): { key: CompiledBucketKey } | { index: number; message: string } {
  const compiled: Element[] = [];
  for (const [index, element] of elements.entries()) {
    const seed = seedReader(element);
    if (seed) {
      compiled.push({ seed });
      continue;
    }
    const result = expressions.value(element, phase);
    if (!result.ok) return { index, message: result.message };
    const refusal = refusedType(result.expression.type);
    if (refusal) return { index, message: refusal };
    compiled.push({ expression: result.expression });
  }
  const seeds = compiled.flatMap((element) => ("seed" in element ? [element.seed] : []));
  // The seed's forms alone: exactly the path (and the bucket names) of before, with nothing to fail.
  if (seeds.length === compiled.length) {
    return {
      key(exchange) {
        const parts = seeds.map((read) => read(exchange));
        return { name: JSON.stringify(parts), shown: parts.join(":") };
      },
    };
  }
  return { key: (exchange) => evaluatedKey(compiled, exchange) };
}

function evaluatedKey(elements: readonly Element[], exchange: Exchange): KeyValue {
  const parts: (string | null)[] = [];
  let error: string | undefined;
  for (const [index, element] of elements.entries()) {
    if ("seed" in element) {
      parts.push(element.seed(exchange));
      continue;
    }
    const text = keyText(element.expression.evaluate(exchange));
    if (typeof text === "string") parts.push(text);
    else {
      parts.push(null);
      // Evaluation errors can quote request data: the message is cut like a decision log's fields.
      error ??= `bucket_key[${index}]: ${text.error}`.slice(0, MAX_KEY_ERROR_CHARS);
    }
  }
  const shown = parts.map((part) => part ?? "").join(":");
  return error === undefined ? { name: JSON.stringify(parts), shown } : { name: JSON.stringify(parts), shown, error };
}
