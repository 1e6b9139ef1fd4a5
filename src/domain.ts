/** Host-name text the settings and the tunnels both read: one definition, below either of them. */

/** The tunnel domain, lower-cased and without dots at either end; empty means tunnels are off. */
export function normalizeDomain(domain: string | undefined): string {
  return (domain ?? "")
    .trim()
    .toLowerCase()
    .replace(/^\.+|\.+$/g, "");
}
