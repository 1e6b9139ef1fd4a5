/** Public host names of tunnels: `<label>.<TUNNEL_DOMAIN>`, and the public URL built from how the agent reached the edge. */

const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
const LABEL_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789";
export const RANDOM_LABEL_LENGTH = 12;

/** How public clients reach the edge: the scheme and port the agent itself used (port "" = the scheme's default). */
export interface PublicBase {
  readonly scheme: "http" | "https";
  readonly port: string;
}

/** The tunnel domain, lower-cased and without dots at either end; empty means tunnels are off. */
export function normalizeDomain(domain: string | undefined): string {
  return (domain ?? "").trim().toLowerCase().replace(/^\.+|\.+$/g, "");
}

/** The label of a tunnel host (`abc` for `abc.localhost`), or undefined when `hostname` is not under `domain`. */
export function tunnelLabelOf(hostname: string, domain: string): string | undefined {
  if (domain === "") return undefined;
  const host = hostname.toLowerCase().replace(/\.$/, "");
  if (!host.endsWith(`.${domain}`)) return undefined;
  return host.slice(0, -domain.length - 1);
}

/** True for a DNS label we hand out or accept as a subdomain. */
export function isValidLabel(label: string): boolean {
  return LABEL.test(label);
}

export function randomLabel(random: (bytes: Uint8Array) => Uint8Array = (bytes) => crypto.getRandomValues(bytes)): string {
  const bytes = random(new Uint8Array(RANDOM_LABEL_LENGTH));
  let label = "";
  // 256 % 36 = 4, so the first letters are slightly likelier; irrelevant for unguessability at 12 characters.
  for (const byte of bytes) label += LABEL_ALPHABET[byte % LABEL_ALPHABET.length];
  return label;
}

/** The base public clients use, taken from the URL of the agent's own connection to the edge. */
export function publicBaseOf(agentUrl: URL): PublicBase {
  return { scheme: agentUrl.protocol === "https:" ? "https" : "http", port: agentUrl.port };
}

export function publicUrl(label: string, domain: string, base: PublicBase): string {
  return `${base.scheme}://${label}.${domain}${base.port ? `:${base.port}` : ""}`;
}
