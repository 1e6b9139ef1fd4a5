/**
 * What workerd itself prints while the worker tests run — "uncaught exception", "exception = … disconnected",
 * native "stack:" lines — goes to test-artifacts/workerd.log instead of the terminal, and is printed after the
 * summary only when the run fails. Tests provoke most of it on purpose (a peer that disconnects, an agent that
 * breaks the protocol, a body channel that never comes), and none of it can be told apart by test: the
 * vitest-pool-workers pool writes workerd's structured logs straight to the main process's stdout and stderr
 * (its `handleStructuredLogs` cannot be replaced), so that stream is where they are caught.
 */

import { appendFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import type { Reporter, SerializedError, TestModule, TestRunEndReason, Vite } from "vitest/node";

/** Where workerd's lines go; test-artifacts/ is ignored by git. */
const WORKERD_LOG = fileURLToPath(new URL("../../test-artifacts/workerd.log", import.meta.url));

/**
 * How workerd's structured log messages begin (workerd's own wording, as the pool writes them). Anything else
 * written, vitest's reports included, passes through untouched.
 */
const WORKERD_MESSAGE = /^(uncaught exception; |exception = |stack: \S*workerd|console warning; |NOSENTRY )/;

/** Whether one write to stdout or stderr is a message of workerd's. */
function isWorkerdMessage(chunk: string): boolean {
  return WORKERD_MESSAGE.test(chunk);
}

/** Diverts workerd's messages from `stream` into `file`. */
function divert(stream: NodeJS.WriteStream, file: string): void {
  const write = stream.write;
  stream.write = function (this: NodeJS.WriteStream, chunk: unknown, ...rest: unknown[]) {
    if ((typeof chunk === "string" || chunk instanceof Uint8Array) && isWorkerdMessage(String(chunk))) {
      appendFileSync(file, chunk);
      const callback = rest.find((arg) => typeof arg === "function") as (() => void) | undefined;
      callback?.();
      return true;
    }
    return (write as (...args: unknown[]) => boolean).call(this, chunk, ...rest);
  } as typeof stream.write;
}

/** Diverts workerd's messages, and prints them after a failed run, so that a failure never loses what workerd said. */
class WorkerdLogReporter implements Reporter {
  onInit(): void {
    // The pool writes workerd's errors and warnings to stderr and the rest, its uncaught exceptions among them,
    // to stdout. Kept until the process exits: workerd still reports disconnects while the pool shuts it down.
    divert(process.stdout, WORKERD_LOG);
    divert(process.stderr, WORKERD_LOG);
  }

  onTestRunStart(): void {
    mkdirSync(dirname(WORKERD_LOG), { recursive: true });
    writeFileSync(WORKERD_LOG, "");
  }

  onTestRunEnd(modules: ReadonlyArray<TestModule>, errors: ReadonlyArray<SerializedError>, reason: TestRunEndReason): void {
    if (reason !== "failed") return;
    const log = readFileSync(WORKERD_LOG, "utf8");
    if (log !== "") {
      // Only the end: a CI report shows the tail of the output, and what failed must be in it (printed next).
      const lines = log.trimEnd().split("\n");
      const shown = lines.slice(-WORKERD_LOG_TAIL_LINES).join("\n");
      process.stdout.write(
        `\nworkerd's own log during this run, its last ${Math.min(lines.length, WORKERD_LOG_TAIL_LINES)} of ` +
          `${lines.length} lines (all of it in ${WORKERD_LOG}):\n${shown}\n`,
      );
    }
    process.stdout.write(`\n${failureRecap(modules, errors)}\n`);
  }
}

/** How many of workerd's last lines a failed run prints. */
const WORKERD_LOG_TAIL_LINES = 40;

/** What failed, in a few lines, so that it is the last thing a failed run prints. */
function failureRecap(modules: ReadonlyArray<TestModule>, errors: ReadonlyArray<SerializedError>): string {
  const lines = ["What failed in this run:"];
  for (const module of modules) {
    const failedTests = [...module.children.allTests("failed")];
    if (failedTests.length === 0 && module.state() !== "failed") continue;
    lines.push(`  ${module.moduleId}`);
    for (const error of module.errors()) lines.push(`    (file) ${firstLine(error.message)}`);
    for (const test of failedTests) {
      lines.push(`    ${test.fullName}: ${firstLine(test.result().errors?.[0]?.message)}`);
    }
  }
  for (const error of errors) lines.push(`  unhandled: ${firstLine(error.message ?? String(error))}`);
  if (lines.length === 1) lines.push("  no test failed; vitest reported the run as failed (see its summary above)");
  return lines.join("\n");
}

function firstLine(message: string | undefined): string {
  return (message ?? "(no message)").split("\n")[0].slice(0, 300);
}

/** The plugin for the worker tests' project. */
export function workerdLogToFile(): Vite.Plugin {
  return {
    name: "tollgate:workerd-log-to-file",
    configureVitest({ vitest }) {
      // Pushed here rather than listed in the config, so that it also runs when --reporter replaces the list.
      vitest.config.reporters.push(new WorkerdLogReporter());
    },
  };
}
