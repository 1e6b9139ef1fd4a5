/** Process wiring for the bin: argv, stdio, Ctrl-C (a second Ctrl-C exits at once), exit code. */

import { basename } from "node:path";
import { runCli } from "./cli.ts";
import { growHeapSteadily } from "./heap-growth.ts";

export async function main(): Promise<void> {
  growHeapSteadily();
  const controller = new AbortController();
  let interrupted = 0;
  const onSignal = () => {
    if (++interrupted > 1) process.exit(130);
    controller.abort();
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  const code = await runCli(process.argv.slice(2), {
    stdout: process.stdout,
    stderr: process.stderr,
    cwd: process.cwd(),
    env: process.env,
    signal: controller.signal,
    // A symlink or file named `ngrok` keeps its own name here (Node resolves argv[1] to an absolute path, not through links).
    invokedAs: process.argv[1] === undefined ? undefined : basename(process.argv[1]),
  });
  process.exit(code);
}
