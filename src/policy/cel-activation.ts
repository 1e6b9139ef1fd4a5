/**
 * The variables CEL expressions read, built from an exchange: one snapshot object whose properties are read
 * only when an expression reads them, each at most once (variables/catalog.ts lists them).
 */

import type { Exchange } from "./exchange.ts";
import { READERS } from "./variables/catalog.ts";

export { headersChanged } from "./variables/header-map.ts";

/** The variables of one exchange as CEL reads them: a property per name, hidden ones (`@req.url`) included. */
export type Bindings = Readonly<Record<string, unknown>>;

/** The values read so far; the getters below fill it. */
class Snapshot {
  readonly read = new Map<string, unknown>();
  constructor(readonly exchange: Exchange) {}
}

// One getter per variable on the prototype: a snapshot costs one object and one Map, whatever the catalog holds.
for (const [name, reader] of Object.entries(READERS)) {
  Object.defineProperty(Snapshot.prototype, name, {
    get(this: Snapshot) {
      if (this.read.has(name)) return this.read.get(name);
      const value = reader(this.exchange);
      this.read.set(name, value);
      return value;
    },
  });
}

/**
 * The variables of the exchange as it is now. A snapshot: the caller builds it again after anything changed
 * the exchange (an action ran, the response arrived), and reuses it until then.
 */
export function activation(exchange: Exchange): Bindings {
  return new Snapshot(exchange) as unknown as Bindings;
}
