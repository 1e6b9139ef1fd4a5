/** fast-check arbitraries of valid traffic policy documents, as the plain values a YAML or JSON file holds. */

import fc from "fast-check";

export type PolicyValue = Record<string, unknown>;

const headerName = fc.stringMatching(/^[a-z][a-z0-9-]{0,14}$/);
const mixedCaseHeaderName = fc.stringMatching(/^[A-Za-z][A-Za-z0-9-]{0,14}$/);
/** Header values Headers accepts: visible ASCII and spaces inside. */
// `${` opens an interpolation (a CEL expression up to its `}`), so plain values of a valid document never hold it.
const plain = (value: string) => !value.includes("${");
const headerValue = fc.stringMatching(/^[!-~]([ -~]{0,18}[!-~])?$/).filter(plain);
/** Free text (names, bodies): any Unicode, so serialisation has to quote and escape. */
const text = (maxLength: number) => fc.string({ unit: "grapheme", minLength: 1, maxLength });

const INBOUND_EXPRESSIONS = [
  "req.method != 'OPTIONS'",
  "req.url.path.startsWith('/api/')",
  "hasReqHeader('Authorization')",
  "'x-api-key' in req.headers",
  "getQueryParam('debug') == ['1']",
  "inCidrRange(conn.client_ip, '10.0.0.0/8')",
  "!inCidrRanges(conn.client_ip, ['192.168.0.0/16', '::1/128'])",
  "actions.svc.rate_limit.error.code != ''",
  "actions.svc.rate_limit.limited",
  "req.host.endsWith('.example.com') && req.url.query.contains('a=b')",
];
const OUTBOUND_EXPRESSIONS = [...INBOUND_EXPRESSIONS, "res.status_code >= 500", "hasResHeader('Server')", "res.headers['content-type'] == ['text/html']"];

/** A window from 60s to 24h in steps of 10s, written in one of the equivalent duration forms. */
export const rate = fc.integer({ min: 6, max: 8_640 }).chain((tens) => {
  const seconds = tens * 10;
  const forms = [`${seconds}s`, `${seconds * 1000}ms`];
  if (seconds % 60 === 0) forms.push(`${seconds / 60}m`);
  if (seconds % 3_600 === 0) forms.push(`${seconds / 3_600}h`);
  const h = Math.floor(seconds / 3_600);
  const m = Math.floor((seconds % 3_600) / 60);
  const s = seconds % 60;
  forms.push(`${h ? `${h}h` : ""}${m ? `${m}m` : ""}${s ? `${s}s` : ""}`);
  return fc.constantFrom(...forms);
});

const bucketKeyElement = fc.oneof(
  fc.constant("req.host"),
  fc.constant("conn.client_ip"),
  headerName.map((name) => `req.headers['${name}']`),
  mixedCaseHeaderName.map((name) => `getReqHeader('${name}')`),
);

const rateLimit = fc.record({
  type: fc.constant("rate-limit"),
  config: fc.record(
    {
      name: text(60),
      algorithm: fc.constant("sliding_window"),
      capacity: fc.oneof(fc.integer({ min: 1, max: 1_000 }), fc.integer({ min: 1, max: 2_000_000_000 })),
      rate,
      bucket_key: fc.array(bucketKeyElement, { minLength: 1, maxLength: 10 }),
    },
    { requiredKeys: ["capacity", "rate"] },
  ),
});

const deny = fc.record(
  { type: fc.constant("deny"), config: fc.record({ status_code: fc.integer({ min: 400, max: 599 }) }, { requiredKeys: [] }) },
  { requiredKeys: ["type"] },
);

const customResponse = fc.record({
  type: fc.constant("custom-response"),
  config: fc.record(
    {
      status_code: fc.integer({ min: 200, max: 599 }).filter((status) => ![204, 205, 304].includes(status)),
      body: fc.string({ unit: "grapheme", maxLength: 80 }).filter(plain),
      headers: fc.dictionary(headerName, headerValue, { maxKeys: 3 }),
    },
    { requiredKeys: [] },
  ),
});

const addHeaders = fc.record({
  type: fc.constant("add-headers"),
  config: fc.record({ headers: fc.dictionary(headerName, headerValue, { minKeys: 1, maxKeys: 4 }) }),
});

const removeHeaders = fc.record({
  type: fc.constant("remove-headers"),
  config: fc.record({ headers: fc.array(mixedCaseHeaderName, { minLength: 1, maxLength: 4 }) }),
});

const action = fc.oneof(rateLimit, deny, customResponse, addHeaders, removeHeaders);

const entry = (expressions: readonly string[]) =>
  fc.record(
    {
      name: fc.string({ unit: "grapheme", maxLength: 60 }),
      expressions: fc.array(fc.constantFrom(...expressions), { maxLength: 3 }),
      actions: fc.array(action, { minLength: 1, maxLength: 3 }),
    },
    { requiredKeys: ["actions"] },
  );

/** A valid traffic policy document. */
export const policyDocument: fc.Arbitrary<PolicyValue> = fc.record(
  {
    inbound: fc.array(entry(INBOUND_EXPRESSIONS), { maxLength: 2 }),
    outbound: fc.array(entry(OUTBOUND_EXPRESSIONS), { maxLength: 2 }),
  },
  { requiredKeys: [] },
);
