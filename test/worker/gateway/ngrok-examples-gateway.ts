/**
 * One gateway serving every fixture of test/fixtures/ngrok-examples/ (ngrok's documented traffic policies) at
 * its own host, `<fixture name>.test`, in front of the real local upstream; and the `.internal` hosts that the
 * forward-internal fixtures name, each in front of the same upstream under `/via/<host>`, so the upstream's echo
 * says which target served a request. Policies compile on first use (as the Worker does), so a fixture that does
 * not load answers 500 on its own host without taking the others down.
 */

import { inject } from "vitest";
import { gatewayFrom, send } from "./harness.ts";

const upstream = `http://127.0.0.1:${inject("upstreamPort")}`;

/** The fixture files' text by name (`headers-client-ip`), bundled at build: workerd has no file system. */
const fixtureTexts: Record<string, string> = import.meta.glob("../../fixtures/ngrok-examples/*.yaml", {
  query: "?raw",
  import: "default",
  eager: true,
});
const fixtures = Object.fromEntries(Object.entries(fixtureTexts).map(([path, text]) => [path.replace(/^.*\/|\.yaml$/g, ""), text]));

/** The internal endpoints the forward-internal fixtures name. */
const INTERNAL_HOSTS = [
  "example.internal",
  "abc.internal",
  "xyz.internal",
  "api.internal",
  "homepage.internal",
  "endpoint-1.internal",
  "debug-service.internal",
  "production-service.internal",
  "api-service.internal",
  "admin-service.internal",
  "main-app.internal",
  "primary-database.internal",
  "read-replica.internal",
  "experiment-a.internal",
  "experiment-b.internal",
  "control.internal",
  "a.internal",
  "b.internal",
  "service.internal",
];

const edge = (id: string, hostnames: string[], routeUpstream: string, policy?: string) => `
  - id: EDGE-${id}
    hostnames: [${hostnames.map((host) => JSON.stringify(host)).join(", ")}]
    routes:
      - id: only
        match: /
        upstream: ${routeUpstream}${policy ? `\n        traffic_policy: ${policy}` : ""}`;

/**
 * `extraHosts`: more host names per fixture (forward-by-host is reached as api.…, admin.…). `withoutInternal`: the
 * internal hosts left out, so a forward to them finds no target.
 */
export function examplesGateway(extraHosts: Record<string, string[]> = {}, withoutInternal: string[] = []) {
  const names = Object.keys(fixtures);
  const edges = [
    ...names.map((name) => edge(name, [`${name}.test`, ...(extraHosts[name] ?? [])], upstream, `${name}.yaml`)),
    ...INTERNAL_HOSTS.filter((host) => !withoutInternal.includes(host)).map((host) => edge(host.replaceAll(".", "-"), [host], `${upstream}/via/${host}`)),
  ];
  const files: Record<string, string> = { "policies/gateway.yaml": `edges:${edges.join("")}\n` };
  for (const name of names) files[`policies/${name}.yaml`] = fixtures[name];
  return gatewayFrom(files, { policies: "on-first-use" });
}

/** What the upstream's echo saw of a request. */
export interface Seen {
  readonly method: string;
  readonly url: string;
  readonly headers: Record<string, string | undefined>;
  readonly body: string;
}

type Routes = ReturnType<typeof examplesGateway>;

/** A request to fixture `name`'s host from `clientIp`, with `init`'s method, headers and body, and `cf` facts. */
export function exampleRequest(name: string, path = "/", init: RequestInit & { clientIp?: string; cf?: Record<string, unknown> } = {}): Request {
  const { clientIp = "203.0.113.7", cf, headers, ...rest } = init;
  // A client's request carries Host (workerd's incoming requests do); `new Request` alone would not.
  const request = new Request(`https://${name}.test${path}`, { ...rest, headers: { host: `${name}.test`, "cf-connecting-ip": clientIp, ...headers } });
  return cf ? new Request(request, { cf } as RequestInit) : request;
}

/** Sends a request through `routes` and reads the answer's status, headers and text. */
export async function ask(routes: Routes, request: Request) {
  const response = await send(routes, request);
  return { status: response.status, headers: response.headers, text: await response.text() };
}

/** Sends a request that must reach the upstream, and returns what the upstream saw. */
export async function seenUpstream(routes: Routes, request: Request): Promise<Seen> {
  const answer = await ask(routes, request);
  if (answer.headers.get("x-upstream") !== "yes") throw new Error(`the upstream was not reached: ${answer.status} ${answer.text.slice(0, 500)}`);
  return JSON.parse(answer.text) as Seen;
}
