import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { checkLayers } from "../../../scripts/check-layers.mjs";

const script = join(import.meta.dirname, "../../../scripts/check-layers.mjs");
const trees: string[] = [];

/** A src/ tree of `files` (path → source) in a fresh directory. */
function tree(files: Record<string, string>): string {
  const src = mkdtempSync(join(tmpdir(), "check-layers-"));
  trees.push(src);
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(src, path)), { recursive: true });
    writeFileSync(join(src, path), text);
  }
  return src;
}

/** The script run on the tree, as `npm run check:layers` runs it: its exit code and what it printed. */
function checkByScript(files: Record<string, string>): { status: number | null; output: string } {
  const run = spawnSync(process.execPath, [script, "--src", tree(files)], { encoding: "utf8" });
  return { status: run.status, output: run.stdout + run.stderr };
}

/**
 * The same check in this process (loading TypeScript, which the script needs, takes seconds a run): exit code 1 when
 * it has findings, and the findings one a line.
 */
function check(files: Record<string, string>): { status: number; output: string } {
  const { findings, summary } = checkLayers(tree(files));
  return { status: findings.length > 0 ? 1 : 0, output: findings.length > 0 ? findings.join("\n") : summary };
}

afterEach(() => {
  for (const tree of trees.splice(0)) rmSync(tree, { recursive: true, force: true });
});

/** The layers as they are meant to meet: the edge and the agent drive the relay core; the agent uses the policy engine. */
const shaped = {
  "relay/frames.ts": 'import { z } from "zod";\nimport { closeReason } from "../close-reason.ts";\nexport const frame = z.string();\n',
  "close-reason.ts": "export const closeReason = 1;\n",
  "policy/compile.ts": "export const compile = 1;\n",
  "tunnels/edge-streams.ts": 'import { frame } from "../relay/frames.ts";\nexport const edge = frame;\n',
  "agent/edge/local-forwarder.ts":
    'import http from "node:http";\nimport { frame } from "../../relay/frames.ts";\nimport { compile } from "../../policy/compile.ts";\n',
  "worker.ts": 'import { edge } from "./tunnels/edge-streams.ts";\n',
};

describe("check:layers", () => {
  it("passes a tree whose edge and agent import only the relay core, the policy engine and shared leaves", () => {
    const { status, output } = checkByScript(shaped);
    expect(output).toContain("check:layers: 6 modules");
    expect(status).toBe(0);
  });

  it("fails when the agent imports the Worker's tunnels layer, naming the import", () => {
    const { status, output } = check({ ...shaped, "agent/edge/replay.ts": 'import { edge } from "../../tunnels/edge-streams.ts";\n' });
    expect(status).toBe(1);
    expect(output).toContain("layer: src/agent/edge/replay.ts imports src/tunnels/edge-streams.ts (agent → tunnels)");
    expect(output).toContain(
      "confined: src/agent/edge/replay.ts imports src/tunnels/edge-streams.ts; the agent is its own program, so it may import only agent/, relay/, policy/, close-reason.ts, nearest-name.ts",
    );
  });

  it("fails when the agent imports a shared module of the Worker's that is not on its list", () => {
    const { status, output } = check({ ...shaped, "errors.ts": "export const x = 1;\n", "agent/errors-use.ts": 'import { x } from "../errors.ts";\n' });
    expect(status).toBe(1);
    expect(output).toContain("confined: src/agent/errors-use.ts imports src/errors.ts");
  });

  it("fails when the relay core imports another layer, a shared module off its list, or a runtime", () => {
    const { status, output } = check({
      ...shaped,
      "errors.ts": "export const x = 1;\n",
      "relay/stream-table.ts":
        'import { edge } from "../tunnels/edge-streams.ts";\nimport { x } from "../errors.ts";\nimport http from "node:http";\nimport { DurableObject } from "cloudflare:workers";\n',
    });
    expect(status).toBe(1);
    expect(output).toContain("layer: src/relay/stream-table.ts imports src/tunnels/edge-streams.ts (relay → tunnels)");
    expect(output).toContain("confined: src/relay/stream-table.ts imports src/errors.ts; the relay core runs in any runtime");
    expect(output).toContain(
      "confined: src/relay/stream-table.ts imports 'node:http'; the relay core runs in any runtime, so of packages it may import only zod",
    );
    expect(output).toContain("confined: src/relay/stream-table.ts imports 'cloudflare:workers'");
  });

  it("still fails when one layer of the Worker imports another's modules (the script: exit 1, one finding a line)", () => {
    const { status, output } = checkByScript({ ...shaped, "gateway/pipeline.ts": 'import { edge } from "../tunnels/edge-streams.ts";\n' });
    expect(status).toBe(1);
    expect(output).toContain("layer: src/gateway/pipeline.ts imports src/tunnels/edge-streams.ts (gateway → tunnels); wire the two in src/worker.ts instead");
    expect(output).toContain("check:layers: 1 finding(s) in src/:\n  - layer: src/gateway/pipeline.ts");
  });

  it("fails on an import cycle, a type-only import included, naming one loop of it", () => {
    const { status, output } = check({
      ...shaped,
      "policy/cel.ts": 'import { registry } from "./actions/index.ts";\nexport const compile = registry;\n',
      "policy/actions/index.ts": 'import { rateLimit } from "./rate-limit.ts";\nexport const registry = [rateLimit];\n',
      "policy/actions/rate-limit.ts": 'import type { compile } from "../cel.ts";\nexport const rateLimit = 1;\n',
    });
    expect(status).toBe(1);
    expect(output).toContain(
      "cycle among 3 modules (src/policy/actions/index.ts, src/policy/actions/rate-limit.ts, src/policy/cel.ts), e.g. policy/actions/index.ts → policy/actions/rate-limit.ts → policy/cel.ts → policy/actions/index.ts",
    );
  });
});
