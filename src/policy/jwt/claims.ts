/** A verified token's JSON (claims, header) as CEL reads it: maps, lists, int for integers, double otherwise. */

/**
 * Levels of maps and lists in a token's claims, the claims object itself being the first. Real tokens nest two
 * or three (Keycloak's `realm_access.roles`, Auth0's namespaced objects); deeper ones are refused.
 */
export const MAX_CLAIM_DEPTH = 8;

export type ClaimsValue = { readonly ok: true; readonly value: ReadonlyMap<string, unknown> } | { readonly ok: false; readonly message: string };

/** The object as CEL values, or why not: more than MAX_CLAIM_DEPTH levels. */
export function claimsValue(object: Readonly<Record<string, unknown>>): ClaimsValue {
  const value = convert(object, 1);
  return value === TOO_DEEP
    ? { ok: false, message: `the token's claims nest deeper than ${MAX_CLAIM_DEPTH} levels` }
    : { ok: true, value: value as ReadonlyMap<string, unknown> };
}

const TOO_DEEP = Symbol("too deep");

function convert(value: unknown, depth: number): unknown {
  if (typeof value === "number") return Number.isSafeInteger(value) ? BigInt(value) : value;
  if (value === null || typeof value !== "object") return value;
  if (depth > MAX_CLAIM_DEPTH) return TOO_DEEP;
  const entries = Array.isArray(value) ? value.map((item, index) => [index, item] as const) : Object.entries(value);
  const converted: Array<readonly [string | number, unknown]> = [];
  for (const [key, item] of entries) {
    const next = convert(item, depth + 1);
    if (next === TOO_DEEP) return TOO_DEEP;
    converted.push([key, next]);
  }
  return Array.isArray(value) ? converted.map(([, item]) => item) : new Map(converted as Array<[string, unknown]>);
}
