// Pure helpers of the inspector page: decoding captured messages, pretty-printing, filters. No DOM here.

/** base64 → bytes. */
export function base64Bytes(text) {
  const binary = atob(text || "");
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

/** A raw HTTP/1.1 message → its head (text) and body (bytes). */
export function splitMessage(bytes) {
  for (let i = 0; i + 3 < bytes.length; i++) {
    if (bytes[i] === 13 && bytes[i + 1] === 10 && bytes[i + 2] === 13 && bytes[i + 3] === 10) {
      return { head: latin1(bytes.subarray(0, i)), body: bytes.subarray(i + 4) };
    }
  }
  return { head: latin1(bytes), body: new Uint8Array(0) };
}

function latin1(bytes) {
  let text = "";
  for (let i = 0; i < bytes.length; i += 8192) text += String.fromCharCode(...bytes.subarray(i, i + 8192));
  return text;
}

/** True when the bytes read as UTF-8 text (few control characters, no invalid sequences). */
export function looksLikeText(bytes) {
  if (bytes.length === 0) return true;
  let text;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes.subarray(0, 64 * 1024));
  } catch {
    // a multi-byte character cut at the sample's end is still text
    if (bytes.length <= 64 * 1024) return false;
    text = new TextDecoder("utf-8").decode(bytes.subarray(0, 64 * 1024));
  }
  let control = 0;
  for (const char of text) {
    const code = char.codePointAt(0);
    if (code < 32 && code !== 9 && code !== 10 && code !== 13) control++;
  }
  return control <= text.length / 100;
}

export function utf8(bytes) {
  return new TextDecoder("utf-8").decode(bytes);
}

/** Header map lookup, any case. */
export function headerValue(headers, name) {
  const wanted = name.toLowerCase();
  for (const [key, values] of Object.entries(headers || {})) if (key.toLowerCase() === wanted) return values.join(", ");
  return "";
}

/** Pretty JSON text, or null when the text is not JSON. */
export function prettyJson(text, contentType = "") {
  const trimmed = text.trim();
  if (!/json/i.test(contentType) && !/^[[{]/.test(trimmed)) return null;
  try {
    return JSON.stringify(JSON.parse(trimmed), null, 2);
  } catch {
    return null;
  }
}

/** Pretty JSON cut into [text, class] pieces for colouring (keys, strings, numbers, literals). */
export function jsonTokens(pretty) {
  const tokens = [];
  const pattern = /("(?:[^"\\]|\\.)*")(\s*:)?|(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)|\b(true|false|null)\b/g;
  let last = 0;
  for (let match; (match = pattern.exec(pretty)); ) {
    if (match.index > last) tokens.push([pretty.slice(last, match.index), ""]);
    if (match[1]) {
      tokens.push([match[1], match[2] ? "json-key" : "json-string"]);
      if (match[2]) tokens.push([match[2], ""]);
    } else if (match[3]) tokens.push([match[3], "json-number"]);
    else tokens.push([match[4], "json-literal"]);
    last = pattern.lastIndex;
  }
  if (last < pretty.length) tokens.push([pretty.slice(last), ""]);
  return tokens;
}

/** Classic hex dump: offset, 16 bytes in hex, the printable ones as text. */
export function hexDump(bytes, max = 256 * 1024) {
  const lines = [];
  const end = Math.min(bytes.length, max);
  for (let offset = 0; offset < end; offset += 16) {
    const row = bytes.subarray(offset, Math.min(offset + 16, end));
    const hex = [...row].map((byte) => byte.toString(16).padStart(2, "0")).join(" ");
    const text = [...row].map((byte) => (byte >= 32 && byte < 127 ? String.fromCharCode(byte) : ".")).join("");
    lines.push(`${offset.toString(16).padStart(8, "0")}  ${hex.padEnd(47)}  ${text}`);
  }
  if (bytes.length > end) lines.push(`… ${bytes.length - end} more bytes`);
  return lines.join("\n");
}

/** A raw message as text: printable as is, CR shown as ␍, other control bytes as \xNN. */
export function rawText(bytes, max = 512 * 1024) {
  const text = utf8(bytes.subarray(0, max));
  const shown = text.replace(/\r/g, "␍").replace(/[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]/g, (char) => `\\x${char.charCodeAt(0).toString(16).padStart(2, "0")}`);
  return bytes.length > max ? `${shown}\n… ${bytes.length - max} more bytes` : shown;
}

/** Nanoseconds → "850 µs", "12.3 ms", "1.24 s". */
export function formatDuration(ns) {
  if (!(ns >= 0)) return "";
  if (ns < 1e6) return `${Math.round(ns / 1e3)} µs`;
  if (ns < 1e9) return `${(ns / 1e6).toFixed(ns < 1e8 ? 1 : 0)} ms`;
  return `${(ns / 1e9).toFixed(2)} s`;
}

export function formatBytes(n) {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

/** CSS class of a summary's status: s2…s5, sfail, spending. */
export function statusClass(summary) {
  if (summary.status_code) return `s${String(summary.status_code)[0]}`;
  return summary.state === "failed" ? "sfail" : "spending";
}

export function statusLabel(summary) {
  if (summary.status_code) return String(summary.status_code);
  return summary.state === "failed" ? "error" : "…";
}

/**
 * Filters: path is a substring of the path and query (any case); method and tunnel exact; status "404",
 * "4xx"/"4", "error" or "pending".
 */
export function matchesFilter(summary, { path = "", method = "", status = "", tunnel = "" }) {
  if (path && !summary.uri.toLowerCase().includes(path.trim().toLowerCase())) return false;
  if (method && summary.method !== method) return false;
  if (tunnel && summary.tunnel_name !== tunnel) return false;
  const wanted = status.trim().toLowerCase();
  if (wanted) {
    if (wanted === "error" || wanted === "failed") return summary.state === "failed";
    if (wanted === "pending") return summary.state === "pending";
    const code = summary.status_code ? String(summary.status_code) : "";
    const prefix = wanted.replace(/x+$/, "");
    if (!code?.startsWith(prefix) || (prefix.length === 3 && code !== prefix)) return false;
  }
  return true;
}

/** Header map → "Name: value" lines, one per value; Content-Length left out (a replay sets it). */
export function headerLines(headers) {
  const lines = [];
  for (const [name, values] of Object.entries(headers || {})) {
    if (name.toLowerCase() === "content-length") continue;
    for (const value of values) lines.push(`${name}: ${value}`);
  }
  return lines.join("\n");
}

/**
 * "Name: value" lines → {headers: name → [values]} or {error}. The map has no prototype, so a header
 * named `__proto__` or `constructor` is a key like any other (and JSON.stringify sends it as one).
 */
export function parseHeaderLines(text) {
  const headers = Object.create(null);
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (!line.trim()) continue;
    const colon = line.indexOf(":");
    const name = colon > 0 ? line.slice(0, colon).trim() : "";
    if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) return { error: `line ${i + 1}: expected "Name: value"` };
    (headers[name] ||= []).push(line.slice(colon + 1).trim());
  }
  return { headers };
}

/** An RFC 3339 time → "19:39:56.107" in the browser's time zone ("" when it does not parse). */
export function clockTime(rfc3339) {
  const date = new Date(rfc3339);
  if (Number.isNaN(date.getTime())) return "";
  const two = (n) => String(n).padStart(2, "0");
  return `${two(date.getHours())}:${two(date.getMinutes())}:${two(date.getSeconds())}.${String(date.getMilliseconds()).padStart(3, "0")}`;
}

const FAILURES = {
  upstream_unreachable: [
    "The local service could not be reached",
    "Nothing accepted the connection at the tunnel's address. Is the service running? The public client got a 502 from the edge.",
  ],
  upstream_timeout: ["The local service did not answer in time", "The public client got a 502 from the edge."],
  upstream_error: [
    "The local service broke the exchange",
    "It closed the connection or sent a response that is not HTTP. The public client got a 502 from the edge.",
  ],
  cancelled: ["The public client went away", "It closed the connection before the response was complete."],
};

/** Why an exchange has no response, in words: {title, detail (the agent's message and code), text}. */
export function failureText(error) {
  const detail = error ? `${error.message} (${error.code})` : "";
  const known = error && FAILURES[error.code];
  if (known) return { title: known[0], detail, text: known[1] };
  return { title: "The exchange failed", detail, text: "No response was recorded." };
}

/**
 * An agent API error body → one message. `msg` often ends with `details.err` already ("invalid replay
 * request: request.method: …"); it is then said once.
 */
export function apiErrorMessage(body, fallback) {
  const msg = body && typeof body.msg === "string" ? body.msg : "";
  const err = body?.details && typeof body.details.err === "string" ? body.details.err : "";
  if (!msg) return err || fallback;
  return err && !msg.includes(err) ? `${msg}: ${err}` : msg;
}

/** The replay field an API error names ("request.method: …" → "method"), or null. */
export function replayField(message) {
  const match = /\brequest\.(method|uri|headers|body|body_base64)\b/.exec(message || "");
  return match ? (match[1] === "body_base64" ? "body" : match[1]) : null;
}
