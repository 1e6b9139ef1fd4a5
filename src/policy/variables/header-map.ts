/**
 * Header maps as expressions read them (`req.headers`, `res.headers`), built once per Headers object rather
 * than once per expression (a request with thousands of headers and a policy of a thousand expressions cost
 * seconds). Keyed weakly, so a request's map goes with it; the actions that change headers call `headersChanged`.
 */

import { ELEMENT_UNITS } from "../cel-meter.ts";
import type { EvaluationBudget } from "../evaluation-budget.ts";

const headerMaps = new WeakMap<Headers, Map<string, string[]>>();

/** Forgets the map of `headers` after an action changed them, so the next expression sees the change. */
export function headersChanged(headers: Headers): void {
  headerMaps.delete(headers);
}

export function headerMap(headers: Headers, budget: EvaluationBudget): Map<string, string[]> {
  let map = headerMaps.get(headers);
  if (map) return map;
  map = new Map<string, string[]>();
  let units = 0;
  // Iteration yields each set-cookie separately and every other name once (joined); keep them all.
  for (const [name, value] of headers) {
    // Appended in place: copying the list per value cost n² for n repeated set-cookie fields (64 ms for 8,000).
    const values = map.get(name);
    if (values) values.push(value);
    else map.set(name, [value]);
    units += ELEMENT_UNITS + name.length + value.length;
  }
  // Building it is work of the request like any other (once per request and Headers object).
  budget.chargeCel(units);
  headerMaps.set(headers, map);
  return map;
}
