/** Public host names of tunnels: `<label>.<TUNNEL_DOMAIN>`, and the public URL built from how the agent reached the edge. */

const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
const LABEL_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789";
export const RANDOM_LABEL_LENGTH = 12;

/** How public clients reach the edge: the scheme and port the agent itself used (port "" = the scheme's default). */
export interface PublicBase {
  readonly scheme: "http" | "https";
  readonly port: string;
}

/** The label of a tunnel host (`abc` for `abc.localhost`), or undefined when `hostname` is not under `domain`. */
export function tunnelLabelOf(hostname: string, domain: string): string | undefined {
  if (domain === "") return undefined;
  const host = (hostname.endsWith(".") ? hostname.slice(0, -1) : hostname).toLowerCase();
  if (!host.endsWith(`.${domain}`)) return undefined;
  return host.slice(0, -domain.length - 1);
}

/**
 * Labels no tenant may claim: names people trust on sight (a phishing page at `login.<domain>` or
 * `admin.<domain>` would look like the operator's own), and names of infrastructure.
 */
export const RESERVED_LABELS: ReadonlySet<string> = new Set(
  (
    "www api admin administrator root login logout signin signup register auth oauth sso id identity account accounts " +
    "app apps dashboard console portal manage management billing pay payment payments secure security support help " +
    "docs status blog mail email webmail smtp imap pop ftp ns ns1 ns2 dns mx vpn cdn static assets edge gateway " +
    "tunnel tunnels agent tollgate ngrok localhost internal"
  ).split(" "),
);

export function isReservedLabel(label: string): boolean {
  return RESERVED_LABELS.has(label);
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
