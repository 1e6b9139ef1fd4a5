/**
 * The URLs `forward-internal` accepts: an internal endpoint as ngrok writes one (`https://api.internal`), which
 * Tollgate reads as a host name only. docs/policies.md#forward-internal says what each host names.
 */

/** Characters of a `forward-internal` url; a host name is at most 253, so this leaves room for a scheme and port. */
export const MAX_INTERNAL_URL_CHARS = 2048;

const INTERNAL_SUFFIX = ".internal";

/** True for a host name under `.internal`: served only to forward-internal, never to a client directly. */
export function isInternalHost(hostname: string): boolean {
  const host = (hostname.endsWith(".") ? hostname.slice(0, -1) : hostname).toLowerCase();
  return host.endsWith(INTERNAL_SUFFIX) && host.length > INTERNAL_SUFFIX.length;
}

const DNS_LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

/** `api.internal` → `api`: the one DNS label before `.internal`, which names a tunnel; undefined for `a.b.internal`. */
export function internalLabelOf(hostname: string): string | undefined {
  const host = (hostname.endsWith(".") ? hostname.slice(0, -1) : hostname).toLowerCase();
  if (!host.endsWith(INTERNAL_SUFFIX)) return undefined;
  const label = host.slice(0, -INTERNAL_SUFFIX.length);
  return DNS_LABEL.test(label) ? label : undefined;
}

export type InternalUrlResult = { readonly ok: true; readonly url: URL } | { readonly ok: false; readonly message: string };

/** Checks a configured url at load; a located message says what is wrong with it. */
export function parseInternalUrl(text: string): InternalUrlResult {
  if (text.length > MAX_INTERNAL_URL_CHARS) return refused(`must be at most ${MAX_INTERNAL_URL_CHARS} characters (has ${text.length})`);
  if (text.includes("${")) {
    return refused(
      "must name one internal endpoint: ${…} interpolation in url is not supported (write one forward-internal entry per target, gated by expressions)",
    );
  }
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return refused(`must be a URL such as https://api.internal (got ${JSON.stringify(text)})`);
  }
  if (url.protocol === "tcp:" || url.protocol === "tls:") {
    return refused(`${url.protocol.slice(0, -1)}:// endpoints cannot be served: Cloudflare Workers ingress accepts only HTTP(S); use http:// or https://`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return refused(`must be an http:// or https:// URL (got ${url.protocol.slice(0, -1)}://)`);
  if (url.username !== "" || url.password !== "") return refused("must not carry a user name or password");
  if (!isInternalHost(url.hostname))
    return refused(`must name an internal endpoint: a host name ending in .internal, such as https://api.internal (got '${url.hostname}')`);
  // The URL parser drops the scheme's default port, so only another port is left here.
  if (url.port !== "")
    return refused(`port ${url.port} names no other endpoint: Tollgate tells internal endpoints apart by host name only; leave the port out`);
  if (url.pathname !== "/" || url.search !== "" || url.hash !== "") return refused("must not have a path, query or fragment: the request keeps its own");
  return { ok: true, url };
}

function refused(message: string): InternalUrlResult {
  return { ok: false, message };
}
