/**
 * The policy loader under fast-check: random valid documents load from YAML and JSON; a single random
 * mutation (wrong type, unknown key, out-of-range value) is rejected at its own path and line; and no
 * input, however broken, makes the loader throw.
 */

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { compilePolicy, loadPolicy } from "../../../src/policy/compile.ts";
import { formatIssue, formatPath, type PathSegment } from "../../../src/policy/issues.ts";
import { policyDocument, type PolicyValue } from "../support/policy-arbitraries.ts";

type Format = "yaml" | "json";

function serialize(document: unknown, format: Format): string {
  return format === "json" ? `${JSON.stringify(document, null, 2)}\n` : stringify(document, { lineWidth: 0 });
}

const fileOf = (format: Format) => (format === "json" ? "policies/random.json" : "policies/random.yaml");

const format = fc.constantFrom<Format>("yaml", "json");

describe("valid documents", () => {
  it("always load and compile, from block YAML, flow YAML, indented JSON and one-line JSON", () => {
    fc.assert(
      fc.property(policyDocument, (document) => {
        const texts = [serialize(document, "yaml"), stringify(document, { collectionStyle: "flow" }), serialize(document, "json"), JSON.stringify(document)];
        for (const [index, text] of texts.entries()) {
          const result = loadPolicy(text, index < 2 ? "policies/random.yaml" : "policies/random.json");
          if (!result.ok) throw new Error(`${result.issues.map(formatIssue).join("\n")}\n--- in ---\n${text}`);
          const phases = document as { inbound?: unknown[]; outbound?: unknown[] };
          expect(result.policy.inbound.length).toBe(phases.inbound?.length ?? 0);
          expect(result.policy.outbound.length).toBe(phases.outbound?.length ?? 0);
        }
      }),
      // Each run loads its large document four ways.
      { numRuns: 75 },
    );
  });
});

/** Markers the generator never produces, so the line of a mutated spot can be found in the text. */
const NUMBER_MARK = 31_415_926_535;
const STRING_MARK = "zz-mutated-value";
const KEY_MARK = "zz_unknown_key";

interface Spot {
  readonly path: readonly PathSegment[];
  readonly value: unknown;
  /** What the spot is: decides which mutations apply. */
  readonly role: "document" | "map" | "value" | "capacity" | "status" | "rate" | "limit-name" | "bucket-key";
}

/** Every spot of a valid document, with its role. */
function spotsOf(document: PolicyValue): Spot[] {
  const spots: Spot[] = [{ path: [], value: document, role: "document" }];
  const add = (path: PathSegment[], value: unknown, role: Spot["role"] = "value") => spots.push({ path, value, role });
  for (const phase of ["inbound", "outbound"] as const) {
    const entries = document[phase] as Array<Record<string, unknown>> | undefined;
    if (!entries) continue;
    add([phase], entries);
    entries.forEach((entry, e) => {
      const at = [phase, e];
      add(at, entry, "map");
      if (entry.name !== undefined) add([...at, "name"], entry.name);
      const expressions = entry.expressions as string[] | undefined;
      if (expressions) {
        add([...at, "expressions"], expressions);
        for (const [x, expression] of expressions.entries()) add([...at, "expressions", x], expression);
      }
      const actions = entry.actions as Array<{ type: string; config?: Record<string, unknown> }>;
      add([...at, "actions"], actions);
      actions.forEach((action, a) => {
        const actionPath = [...at, "actions", a];
        add(actionPath, action, "map");
        add([...actionPath, "type"], action.type);
        if (!action.config) return;
        const configPath = [...actionPath, "config"];
        add(configPath, action.config, "map");
        for (const [key, value] of Object.entries(action.config)) {
          const path = [...configPath, key];
          if (key === "capacity") add(path, value, "capacity");
          else if (key === "status_code") add(path, value, "status");
          else if (key === "rate") add(path, value, "rate");
          else if (key === "name") add(path, value, "limit-name");
          else if (key === "bucket_key") add(path, value, "bucket-key");
          else add(path, value);
          if (Array.isArray(value)) for (const [i, element] of value.entries()) add([...path, i], element);
          else if (key === "headers") for (const [name, headerValue] of Object.entries(value as object)) add([...path, name], headerValue);
        }
      });
    });
  }
  return spots;
}

interface Mutation {
  readonly kind: string;
  /** The path the error must name. */
  readonly path: readonly PathSegment[];
  readonly apply: (document: PolicyValue) => unknown;
  /** The line that must be reported, found in the serialised text. */
  readonly line: (text: string) => number;
}

const lineOfMark =
  (mark: string, offset = 0) =>
  (text: string) => {
    const index = text.split("\n").findIndex((line) => line.includes(mark));
    if (index < 0) throw new Error(`marker ${mark} not in the text`);
    return index + 1 + offset;
  };

function setAt(document: PolicyValue, path: readonly PathSegment[], value: unknown): unknown {
  if (path.length === 0) return value;
  const copy = structuredClone(document);
  let parent: Record<PathSegment, unknown> = copy;
  for (const segment of path.slice(0, -1)) parent = parent[segment] as Record<PathSegment, unknown>;
  parent[path[path.length - 1]] = value;
  return copy;
}

/** The mutations that make the document invalid at `spot`, each one a single change. */
function mutationsAt(spot: Spot): Mutation[] {
  const { path, value, role } = spot;
  const underKey = typeof path[path.length - 1] === "string";
  const replace = (kind: string, replacement: unknown, line: (text: string) => number, reportedAt = path): Mutation => ({
    kind,
    path: reportedAt,
    apply: (document) => setAt(document, path, replacement),
    line,
  });
  const out: Mutation[] = [];

  // wrong types: a scalar marker of another type; under a map key also a collection holding a marker
  // (its line is the key's, one above the marker in block YAML and indented JSON)
  // A header value may be a number (ngrok's examples write `is-ngrok: 1`): sent as its text, so not a mistake.
  const headerValue = underKey && path[path.length - 2] === "headers";
  if (typeof value === "string" && !headerValue) out.push(replace("string → number", NUMBER_MARK, lineOfMark(String(NUMBER_MARK))));
  if (typeof value === "number") out.push(replace("number → string", STRING_MARK, lineOfMark(STRING_MARK)));
  if (Array.isArray(value)) {
    out.push(replace("list → string", STRING_MARK, lineOfMark(STRING_MARK)));
    if (underKey) out.push(replace("list → map", { [STRING_MARK]: 1 }, lineOfMark(STRING_MARK, -1)));
  } else if (typeof value === "object" && value !== null) {
    out.push(replace("map → number", NUMBER_MARK, lineOfMark(String(NUMBER_MARK))));
    if (underKey) out.push(replace("map → list", [STRING_MARK], lineOfMark(STRING_MARK, -1)));
  }

  // unknown keys of the strict maps: document, entries, actions, configs
  if (role === "document" || role === "map") {
    out.push({
      kind: "unknown key",
      path: [...path, KEY_MARK],
      apply: (document) => setAt(document, path, { ...(value as object), [KEY_MARK]: 1 }),
      line: lineOfMark(KEY_MARK),
    });
  }

  // out of range, with values that double as markers
  if (role === "capacity") {
    for (const bad of [-31_415, 2_000_031_415, 314.15]) out.push(replace(`capacity ${bad}`, bad, lineOfMark(String(bad))));
  }
  if (role === "status") {
    for (const bad of [31_415, -314]) out.push(replace(`status_code ${bad}`, bad, lineOfMark(String(bad))));
  }
  if (role === "rate") {
    for (const bad of ["0h0m50s", "1m1s", "31415h", "31 minutes"]) out.push(replace(`rate ${bad}`, bad, lineOfMark(bad)));
  }
  if (role === "limit-name") {
    const long = `${STRING_MARK}${"n".repeat(1_024)}`;
    out.push(replace("name of 1034 characters", long, lineOfMark(STRING_MARK)));
  }
  if (role === "bucket-key") {
    const eleven = Array.from({ length: 11 }, (_, i) => `req.headers['${STRING_MARK}-${i}']`);
    out.push(replace("11 bucket_key elements", eleven, lineOfMark(STRING_MARK, -1)));
    out.push(replace("bad bucket_key element", ["req.host", `req.${STRING_MARK}`], lineOfMark(STRING_MARK), [...path, 1]));
  }
  return out;
}

/** A valid document, one mutation of one of its spots, and a format. */
const mutated = policyDocument.chain((document) => {
  const mutations = spotsOf(document).flatMap(mutationsAt);
  return fc.record({ document: fc.constant(document), mutation: fc.constantFrom(...mutations), format });
});

describe("mutated documents", () => {
  it("are rejected with one message, at the mutated path and its line, in our wording", () => {
    fc.assert(
      fc.property(mutated, ({ document, mutation, format }) => {
        const text = serialize(mutation.apply(document), format);
        const result = loadPolicy(text, fileOf(format));
        expect(result.ok, `${mutation.kind} at ${formatPath(mutation.path)} was accepted:\n${text}`).toBe(false);
        if (result.ok) return;
        const line = mutation.line(text);
        for (const issue of result.issues) {
          const context = `${mutation.kind}: ${formatIssue(issue)}\n${text}`;
          expect(issue.path, context).toEqual(mutation.path);
          expect(issue.line, context).toBe(line);
          expect(issue.file).toBe(fileOf(format));
          expect(issue.message, context).not.toMatch(/^(Invalid|Too (big|small)|Expected)/);
        }
        // one change, one message: nothing said twice, nothing reported elsewhere
        expect(result.issues.map(formatIssue), text).toHaveLength(1);
      }),
      { numRuns: 250 },
    );
  });

  it("report an unknown key exactly as 'unknown key'", () => {
    const unknownKey = policyDocument.chain((document) =>
      fc.record({
        document: fc.constant(document),
        mutation: fc.constantFrom(
          ...spotsOf(document)
            .flatMap(mutationsAt)
            .filter((mutation) => mutation.kind === "unknown key"),
        ),
        format,
      }),
    );
    fc.assert(
      fc.property(unknownKey, ({ document, mutation, format }) => {
        const text = serialize(mutation.apply(document), format);
        const result = loadPolicy(text, fileOf(format));
        expect(result.ok ? [] : result.issues.map(formatIssue)).toEqual([
          `${fileOf(format)}:${mutation.line(text)}: ${formatPath(mutation.path)}: unknown key`,
        ]);
      }),
      { numRuns: 100 },
    );
  });
});

describe("the loader never throws", () => {
  const looksLikeIssues = (result: ReturnType<typeof loadPolicy>, text: string) => {
    if (result.ok) return;
    expect(result.issues.length).toBeGreaterThan(0);
    const lineCount = text.split("\n").length;
    for (const issue of result.issues) {
      expect(typeof issue.message).toBe("string");
      expect(issue.message.length).toBeGreaterThan(0);
      if (issue.line !== undefined) {
        expect(Number.isInteger(issue.line)).toBe(true);
        expect(issue.line).toBeGreaterThanOrEqual(1);
        expect(issue.line).toBeLessThanOrEqual(lineCount);
      }
    }
  };

  it("on arbitrary text", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 300 }), format, (text, format) => {
        looksLikeIssues(loadPolicy(text, fileOf(format)), text);
      }),
      { numRuns: 300 },
    );
  });

  it("on YAML-looking token soup (anchors, aliases, tags, flow and block collections)", () => {
    const token = fc.constantFrom(
      "inbound:",
      "outbound:",
      "\n",
      "\n  ",
      "\n    ",
      "- ",
      "actions:",
      "type: rate-limit",
      "type: deny",
      "config:",
      "capacity: 5",
      "rate: 60s",
      "{",
      "}",
      "[",
      "]",
      ",",
      ": ",
      "&a ",
      "*a",
      "!!binary ",
      "!tag ",
      "<<: ",
      "? ",
      "'",
      '"',
      "#",
      "---",
      "...",
      "|",
      ">",
      "expressions: [\"req.method == 'GET'\"]",
      "null",
      "~",
      "1e400",
      "0x1F",
    );
    fc.assert(
      fc.property(fc.array(token, { maxLength: 40 }), format, (tokens, format) => {
        const text = tokens.join("");
        looksLikeIssues(loadPolicy(text, fileOf(format)), text);
      }),
      { numRuns: 400 },
    );
  });

  it("on any JSON value, serialised as JSON or YAML", () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 5 }), format, (value, format) => {
        const text = serialize(value, format);
        looksLikeIssues(loadPolicy(text, fileOf(format)), text);
      }),
      { numRuns: 200 },
    );
  });

  it("on any value handed to compilePolicy directly", () => {
    fc.assert(
      fc.property(
        fc.anything({ maxDepth: 4, withNullPrototype: true, withBigInt: true, withDate: true, withMap: true, withSet: true, withSparseArray: true }),
        (value) => {
          const result = compilePolicy(value);
          expect(typeof result.ok).toBe("boolean");
        },
      ),
      { numRuns: 300 },
    );
  });

  it("on a mutated valid document with any value at any spot", () => {
    const anyValueAnywhere = policyDocument.chain((document) =>
      fc.record({ document: fc.constant(document), spot: fc.constantFrom(...spotsOf(document)), value: fc.jsonValue({ maxDepth: 3 }), format }),
    );
    fc.assert(
      fc.property(anyValueAnywhere, ({ document, spot, value, format }) => {
        const text = serialize(setAt(document, spot.path, value), format);
        looksLikeIssues(loadPolicy(text, fileOf(format)), text);
      }),
      { numRuns: 200 },
    );
  });
});
