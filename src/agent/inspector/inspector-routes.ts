/**
 * The web inspector at `http://<web_addr>/`: one static page (HTML, CSS, ES modules, no dependencies, no
 * network beyond the agent API) served with a strict Content-Security-Policy — captured requests come from
 * the public internet, so the page shows them as text only and runs no inline or foreign script.
 */

import type { Hono } from "hono";
import { readFileSync } from "node:fs";

const ASSETS = new URL("./assets/", import.meta.url);

const SECURITY_HEADERS = {
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
};

const FILES: Record<string, string> = {
  "inspector.js": "text/javascript; charset=utf-8",
  "format.js": "text/javascript; charset=utf-8",
  "simulate.js": "text/javascript; charset=utf-8",
  "simulate.css": "text/css; charset=utf-8",
  "inspector.css": "text/css; charset=utf-8",
  "favicon.svg": "image/svg+xml",
};

/** Paths that show the page (the page picks its view from the path). */
export const INSPECTOR_PAGES = ["/", "/inspect/http", "/inspect/simulate", "/status"] as const;

/** Mounts the inspector on the agent API's app (pass to `createAgentApi`'s `mounts`). */
export function inspectorRoutes(): (app: Hono) => void {
  // Read once: the page is small, and a broken install should fail at start-up, not on the first visit.
  const page = readFileSync(new URL("index.html", ASSETS));
  const files = new Map(Object.entries(FILES).map(([name, type]) => [name, { body: readFileSync(new URL(name, ASSETS)), type }]));

  return (app) => {
    for (const path of INSPECTOR_PAGES) {
      app.get(path, () => new Response(page, { headers: { ...SECURITY_HEADERS, "content-type": "text/html; charset=utf-8", "cache-control": "no-cache" } }));
    }
    app.get("/inspector/:file", (c, next) => {
      const file = files.get(c.req.param("file"));
      if (!file) return next();
      return new Response(file.body, { headers: { ...SECURITY_HEADERS, "content-type": file.type, "cache-control": "no-cache" } });
    });
  };
}
