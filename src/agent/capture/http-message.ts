/**
 * HTTP/1.1 messages as the inspector shows them: the head (start line and header lines) rebuilt from what
 * the agent relayed, and headers as a map of canonical name → list of values (ngrok's `headers` shape).
 */

export type HeaderList = ReadonlyArray<readonly [string, string]>;

const encoder = new TextEncoder();

/** `content-type` → `Content-Type`, as Go's net/http canonicalizes header names (ngrok's shape). */
export function canonicalHeaderName(name: string): string {
  return name.toLowerCase().replace(/(^|-)([a-z])/g, (_, dash: string, letter: string) => dash + letter.toUpperCase());
}

/**
 * Headers as name → values, names canonical, values in the order they came. The map has no prototype:
 * names come from the public internet, and `__proto__` or `constructor` must be keys like any other
 * (JSON.stringify writes them as such).
 */
export function headerMap(headers: HeaderList): Record<string, string[]> {
  const map: Record<string, string[]> = Object.create(null);
  for (const [name, value] of headers) (map[canonicalHeaderName(name)] ??= []).push(value);
  return map;
}

function headerLines(headers: HeaderList): string {
  return headers.map(([name, value]) => `${name}: ${value}\r\n`).join("");
}

/** `GET /path?q HTTP/1.1\r\n` + header lines + `\r\n`, as bytes. */
export function requestHead(method: string, target: string, proto: string, headers: HeaderList): Uint8Array {
  return encoder.encode(`${method} ${target} ${proto}\r\n${headerLines(headers)}\r\n`);
}

/** `HTTP/1.1 200 OK\r\n` + header lines + `\r\n`, as bytes. */
export function responseHead(proto: string, status: string, headers: HeaderList): Uint8Array {
  return encoder.encode(`${proto} ${status}\r\n${headerLines(headers)}\r\n`);
}

/** The status line's text after the version: `200 OK`; the standard reason when the server sent none. */
export function statusText(code: number, reason: string): string {
  return `${code} ${reason || STATUS_REASONS[code] || ""}`.trimEnd();
}

/** `1.1` → `HTTP/1.1`. */
export function protoOf(httpVersion: string): string {
  return httpVersion.startsWith("HTTP/") ? httpVersion : `HTTP/${httpVersion || "1.1"}`;
}

const STATUS_REASONS: Record<number, string> = {
  100: "Continue",
  101: "Switching Protocols",
  200: "OK",
  201: "Created",
  202: "Accepted",
  204: "No Content",
  206: "Partial Content",
  301: "Moved Permanently",
  302: "Found",
  303: "See Other",
  304: "Not Modified",
  307: "Temporary Redirect",
  308: "Permanent Redirect",
  400: "Bad Request",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not Found",
  405: "Method Not Allowed",
  409: "Conflict",
  413: "Content Too Large",
  415: "Unsupported Media Type",
  422: "Unprocessable Content",
  429: "Too Many Requests",
  500: "Internal Server Error",
  502: "Bad Gateway",
  503: "Service Unavailable",
  504: "Gateway Timeout",
};
