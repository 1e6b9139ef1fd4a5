#!/usr/bin/env node
/**
 * Checks the shape of src/: layers meet only in worker.ts, and no module imports itself round a cycle.
 *
 * - The layers are src/gateway, src/management, src/tunnels, src/relay and src/agent. None imports another's
 *   modules; worker.ts (outside every layer) wires them together. Shared modules outside the layers (errors.ts,
 *   time.ts, policy/, limiter/, …) may be imported by any of them. The relay core is the exception that both
 *   ends of a tunnel share: any layer may import src/relay/.
 * - Two layers are confined further (CONFINED): the relay core imports nothing of src/ outside it but the
 *   leaves listed, and no runtime (node:, cloudflare:, ws: only the packages listed); the agent, a separate
 *   program, imports of the Worker's code only the relay, the policy engine and the leaves listed.
 * - No import cycle among src/ modules, counting `import type` and `export … from` (a type cycle still
 *   ties the modules' meaning together).
 *
 * Imports are read with TypeScript's own scanner (ts.preProcessFile), so comments and strings never count.
 * Usage: node scripts/check-layers.mjs [--src <dir>]  (exit 1 and a list of findings when the shape is broken;
 * --src checks another tree and skips the stale-exception checks; `checkLayers` does the same in-process, as
 * test/unit/scripts/check-layers.test.ts calls it)
 */

import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");

const LAYERS = ["gateway", "management", "tunnels", "relay", "agent"];
/** Layers every layer may import: the relay core, which the edge (tunnels) and the agent both drive. */
const SHARED_LAYERS = new Set(["relay"]);

/**
 * Layers that may import of src/ only their own modules and these (a folder ends with "/"), and of packages
 * only `packages` when it is given (relative imports are src/ modules; anything else is a package or runtime).
 */
const CONFINED = new Map([
  ["relay", { modules: ["relay/", "close-reason.ts"], packages: ["zod"], why: "the relay core runs in any runtime" }],
  ["agent", { modules: ["agent/", "relay/", "policy/", "close-reason.ts", "nearest-name.ts"], why: "the agent is its own program" }],
]);

/**
 * Imports across layers that are known and scheduled to go. Each entry is `from -> to` (paths under src/).
 * An entry that no longer matches an import is reported too, so this list only shrinks.
 */
const LAYER_EXCEPTIONS = new Map([
  // TODO(management): GET /tunnels and /tunnel_sessions read the tunnels' registry; hand a registry reader to the app from worker.ts
  // as its EdgeDirectory is.
  ["management/routes/tunnels.ts -> tunnels/registry-client.ts", "the tunnels endpoint reads the registry"],
  ["management/routes/tunnel-sessions.ts -> tunnels/registry-client.ts", "the tunnel sessions endpoint reads the registry"],
]);

/** Import edges left out of the cycle check (`from -> to`: why it may stay for now); empty, and it only shrinks. */
const CYCLE_EXCEPTIONS = new Map([]);

function sourceFiles(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return /\.(ts|tsx|mts)$/.test(name) && !name.endsWith(".d.ts") ? [path] : [];
  });
}

/** The src/ file a relative specifier names, or undefined for packages and runtime modules. */
function resolveImport(fromFile, specifier) {
  if (!specifier.startsWith(".")) return undefined;
  const base = resolve(dirname(fromFile), specifier);
  for (const candidate of [base, `${base}.ts`, join(base, "index.ts")]) {
    if (existsSync(candidate) && statSync(candidate).isFile()) return candidate;
  }
  return undefined;
}

/**
 * The findings on the tree at `src` (empty when its shape is whole) and the one-line summary printed when there
 * are none. `ownTree`: it is this repository's src/, so exceptions no import uses any more are findings too.
 */
export function checkLayers(src, { ownTree = false } = {}) {
  const name = (file) => relative(src, file).split("\\").join("/");
  const layerOf = (file) => LAYERS.find((layer) => name(file).startsWith(`${layer}/`));

  /** name → names it imports (each once). */
  const graph = new Map();
  /** name → the packages and runtime modules it imports. */
  const packagesOf = new Map();
  for (const file of sourceFiles(src)) {
    const { importedFiles } = ts.preProcessFile(readFileSync(file, "utf8"), true, true);
    const targets = new Set();
    const packages = new Set();
    for (const { fileName } of importedFiles) {
      const target = resolveImport(file, fileName);
      if (target?.startsWith(src)) targets.add(name(target));
      else if (!fileName.startsWith(".")) packages.add(fileName);
    }
    graph.set(name(file), [...targets]);
    packagesOf.set(name(file), [...packages]);
  }

  const findings = [];

  // Confined layers import only what they are allowed.
  for (const [from, targets] of graph) {
    const rule = CONFINED.get(layerOf(join(src, from)));
    if (!rule) continue;
    const allowed = rule.modules.join(", ");
    for (const to of targets) {
      if (!rule.modules.some((module) => (module.endsWith("/") ? to.startsWith(module) : to === module)))
        findings.push(`confined: src/${from} imports src/${to}; ${rule.why}, so it may import only ${allowed}`);
    }
    for (const specifier of rule.packages ? packagesOf.get(from) : []) {
      if (!rule.packages.includes(specifier))
        findings.push(`confined: src/${from} imports '${specifier}'; ${rule.why}, so of packages it may import only ${rule.packages.join(", ")}`);
    }
  }

  // Layers meet only in worker.ts.
  const usedLayerExceptions = new Set();
  for (const [from, targets] of graph) {
    const fromLayer = layerOf(join(src, from));
    if (!fromLayer) continue;
    for (const to of targets) {
      const toLayer = layerOf(join(src, to));
      if (!toLayer || toLayer === fromLayer || SHARED_LAYERS.has(toLayer)) continue;
      const edge = `${from} -> ${to}`;
      if (LAYER_EXCEPTIONS.has(edge)) usedLayerExceptions.add(edge);
      else findings.push(`layer: src/${from} imports src/${to} (${fromLayer} → ${toLayer}); wire the two in src/worker.ts instead`);
    }
  }
  for (const edge of ownTree ? LAYER_EXCEPTIONS.keys() : []) {
    if (!usedLayerExceptions.has(edge)) findings.push(`stale exception: no import '${edge}' any more; remove it from LAYER_EXCEPTIONS`);
  }

  // No cycles: strongly connected components of the import graph (Tarjan), excepted edges left out.
  const usedCycleExceptions = new Set();
  const edgesOf = (from) =>
    (graph.get(from) ?? []).filter((to) => {
      const edge = `${from} -> ${to}`;
      if (!CYCLE_EXCEPTIONS.has(edge)) return true;
      usedCycleExceptions.add(edge);
      return false;
    });

  let counter = 0;
  const index = new Map();
  const lowLink = new Map();
  const stack = [];
  const onStack = new Set();
  const components = [];
  function connect(node) {
    index.set(node, counter);
    lowLink.set(node, counter);
    counter++;
    stack.push(node);
    onStack.add(node);
    for (const next of edgesOf(node)) {
      if (!index.has(next)) {
        connect(next);
        lowLink.set(node, Math.min(lowLink.get(node), lowLink.get(next)));
      } else if (onStack.has(next)) {
        lowLink.set(node, Math.min(lowLink.get(node), index.get(next)));
      }
    }
    if (lowLink.get(node) === index.get(node)) {
      const component = [];
      let member;
      do {
        member = stack.pop();
        onStack.delete(member);
        component.push(member);
      } while (member !== node);
      const selfImport = component.length === 1 && edgesOf(node).includes(node);
      if (component.length > 1 || selfImport) components.push(component.sort());
    }
  }
  for (const node of [...graph.keys()].sort()) if (!index.has(node)) connect(node);

  /** One concrete loop inside a component, for the message: a path from its first module back to it. */
  function loopIn(component) {
    const members = new Set(component);
    const start = component[0];
    const previous = new Map([[start, undefined]]);
    const queue = [start];
    while (queue.length > 0) {
      const node = queue.shift();
      for (const next of edgesOf(node)) {
        if (!members.has(next)) continue;
        if (next === start) {
          const path = [node];
          for (let at = previous.get(node); at !== undefined; at = previous.get(at)) path.unshift(at);
          return [...path, start];
        }
        if (!previous.has(next)) {
          previous.set(next, node);
          queue.push(next);
        }
      }
    }
    return [start, start];
  }
  for (const component of components) {
    findings.push(`cycle among ${component.length} modules (${component.map((m) => `src/${m}`).join(", ")}), e.g. ${loopIn(component).join(" → ")}`);
  }
  for (const edge of ownTree ? CYCLE_EXCEPTIONS.keys() : []) {
    if (!usedCycleExceptions.has(edge)) findings.push(`stale exception: no import '${edge}' any more; remove it from CYCLE_EXCEPTIONS`);
  }
  const summary = `check:layers: ${graph.size} modules; layers meet only in worker.ts (${LAYER_EXCEPTIONS.size} known exceptions), no import cycles (${CYCLE_EXCEPTIONS.size} edges excepted).`;
  return { findings, summary };
}

// Run as a script (`npm run check:layers`, or with --src <dir>): exit 1 and the list of findings when the shape is broken.
if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const srcArgument = process.argv.indexOf("--src");
  const ownTree = srcArgument < 0;
  const { findings, summary } = checkLayers(ownTree ? join(root, "src") : resolve(process.argv[srcArgument + 1]), { ownTree });
  if (findings.length > 0) {
    console.error(`check:layers: ${findings.length} finding(s) in src/:\n${findings.map((finding) => `  - ${finding}`).join("\n")}`);
    process.exit(1);
  }
  console.log(summary);
}
