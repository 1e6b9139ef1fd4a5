/**
 * The HTML page a browser gets for an error the gateway answers itself: the JSON envelope's code, status and
 * message, and what to do, on one self-contained page (inline CSS, no script, no external asset).
 */

import { OPERATION_ID_HEADER, type ErrorAdvice, type ServiceError } from "./errors.ts";

/**
 * Characters of the message a page shows. Messages echo the request's host and path, which a client chooses
 * (a URL may be kilobytes); longer ones are cut and end with "…". The JSON envelope keeps the whole message.
 */
export const MAX_PAGE_MESSAGE_CHARS = 500;

/** No script, no external fetch, no framing, no form target: the page can show text and nothing else. */
export const ERROR_PAGE_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const PAGE_HEADERS = {
  "content-type": "text/html; charset=utf-8",
  "cache-control": "no-store",
  "content-security-policy": ERROR_PAGE_CSP,
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
};

const REASONS: Record<number, string> = {
  400: "Bad Request",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not Found",
  405: "Method Not Allowed",
  413: "Content Too Large",
  414: "URI Too Long",
  415: "Unsupported Media Type",
  426: "Upgrade Required",
  429: "Too Many Requests",
  431: "Request Header Fields Too Large",
  500: "Internal Server Error",
  501: "Not Implemented",
  502: "Bad Gateway",
  503: "Service Unavailable",
  504: "Gateway Timeout",
};

/** Advice for errors that bring none of their own, by status. */
function defaultAdvice(status: number): ErrorAdvice {
  if (status >= 500) {
    return { title: "The gateway could not answer", steps: ["Try again in a moment.", "If you run this gateway: its logs name the operation id below."] };
  }
  if (status === 404) return { title: "Nothing here", steps: ["Check the address for a typing mistake."] };
  return { title: REASONS[status] ?? "The request was refused", steps: ["Check the address and the request, then try again."] };
}

const ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

/** Text made inert in HTML content and in quoted attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c]);
}

/** `text` cut to `max` characters with "…", never splitting a surrogate pair. */
export function truncate(text: string, max: number): string {
  if (text.length <= max) return text;
  let end = max - 1;
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end -= 1;
  return `${text.slice(0, end)}…`;
}

const STYLE = `
:root { color-scheme: light dark; --fg: #1b1f24; --muted: #4d5562; --bg: #ffffff; --panel: #f3f4f6; --accent: #b42318; }
@media (prefers-color-scheme: dark) { :root { --fg: #eceff3; --muted: #b4bcc8; --bg: #14171b; --panel: #1f242b; --accent: #ff8a80; } }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--fg); font: 1rem/1.55 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
main { max-width: 42rem; margin: 0 auto; padding: 3rem 1.25rem; }
.status { margin: 0; color: var(--accent); font-weight: 600; letter-spacing: .02em; }
h1 { margin: .25rem 0 1rem; font-size: 1.75rem; line-height: 1.25; }
h2 { margin: 2rem 0 .5rem; font-size: 1.1rem; }
.message { margin: 0; padding: 1rem; background: var(--panel); border-radius: .5rem; overflow-wrap: anywhere; }
ul { padding-left: 1.25rem; }
li + li { margin-top: .35rem; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: .25rem 1rem; margin: 2rem 0 0; color: var(--muted); }
dd { margin: 0; overflow-wrap: anywhere; }
code { font: .95em ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
footer { color: var(--muted); font-size: .875rem; margin-top: 2.5rem; }
`;

/** The page's HTML for `error` (every interpolated string escaped; the message bounded). */
export function errorPageHtml(error: ServiceError, operationId: string, advice: ErrorAdvice = error.advice ?? defaultAdvice(error.status)): string {
  const reason = REASONS[error.status];
  const status = escapeHtml(reason ? `${error.status} ${reason}` : String(error.status));
  const title = escapeHtml(advice.title);
  const code = escapeHtml(error.errorCode);
  const steps = advice.steps.map((step) => `<li>${escapeHtml(step)}</li>`).join("\n      ");
  return `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <meta name="robots" content="noindex">
  <title>${title} · ${code}</title>
  <style>${STYLE}</style>
</head>
<body>
  <main>
    <p class="status">${status}</p>
    <h1>${title}</h1>
    <p class="message">${escapeHtml(truncate(error.message, MAX_PAGE_MESSAGE_CHARS))}</p>
    <h2>What to do</h2>
    <ul>
      ${steps}
    </ul>
    <dl>
      <dt>Error code</dt><dd><code>${code}</code></dd>
      <dt>Operation id</dt><dd><code>${escapeHtml(operationId)}</code></dd>
    </dl>
    <footer>Tollgate edge gateway</footer>
  </main>
</body>
</html>
`;
}

/** The error as an HTML page: the envelope's status and the error's own headers, plus headers that keep the page inert. */
export function errorPageResponse(error: ServiceError, operationId: string, advice?: ErrorAdvice): Response {
  return new Response(errorPageHtml(error, operationId, advice), {
    status: error.status,
    headers: { ...error.headers, ...PAGE_HEADERS, [OPERATION_ID_HEADER]: operationId },
  });
}
