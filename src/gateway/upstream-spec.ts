/** The upstream of a route as written in gateway.yaml, parsed into a tagged value. */

export type Upstream =
  | { readonly kind: "management" }
  | { readonly kind: "echo" }
  | { readonly kind: "origin"; readonly url: URL }
  | { readonly kind: "tcp"; readonly hostname: string; readonly port: number };

export type UpstreamResult = { ok: true; upstream: Upstream } | { ok: false; message: string };

const EXPECTED = "must be 'management', 'echo', an http(s):// origin URL or tcp://host:port";

export function parseUpstream(text: string): UpstreamResult {
  if (text === "management" || text === "echo") return { ok: true, upstream: { kind: text } };
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return { ok: false, message: `${EXPECTED} (got '${text}')` };
  }
  if (url.protocol === "http:" || url.protocol === "https:") {
    if (url.search || url.hash) return { ok: false, message: "origin URL must not have a query or fragment" };
    return { ok: true, upstream: { kind: "origin", url } };
  }
  if (url.protocol === "tcp:") {
    const port = Number(url.port);
    if (!url.hostname || !url.port || url.pathname.replace(/^\/$/, "") !== "") {
      return { ok: false, message: `TCP upstream must be tcp://host:port (got '${text}')` };
    }
    return { ok: true, upstream: { kind: "tcp", hostname: url.hostname, port } };
  }
  return { ok: false, message: `${EXPECTED} (got '${text}')` };
}
