/**
 * `npm run bench:profile [path …]`: a CPU profile of the gateway's workerd under load, printed as the
 * functions with the most self time. Each path (default /flood and /limited) gets autocannon for
 * BENCH_DURATION seconds while V8's sampling profiler runs through workerd's inspector. The inspector
 * slows the Worker: use the shares, not the speed. `BENCH_PROFILE_OUT=dir` also writes .cpuprofile files.
 */

import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { bundleWorker } from "../shared/bundle.ts";
import { readConfig } from "../shared/config.ts";
import { benchPolicyFiles, PATHS } from "./gateway-files.ts";
import { runLoad } from "../shared/load.ts";
import { startUpstream } from "../shared/upstream.ts";
import { hostWorker } from "../shared/workerd.ts";
import { inspector, type Profile, selfTimes } from "../shared/cpu-profile.ts";

const ROOT = resolve(fileURLToPath(import.meta.url), "../../..");
const INSPECTOR_PORT = 9239;
const TOP = 25;

const config = readConfig();
const paths = process.argv.slice(2).length > 0 ? process.argv.slice(2) : [PATHS.flood, PATHS.limited];
const dir = mkdtempSync(join(tmpdir(), "tollgate-profile-"));
const upstream = await startUpstream();
try {
  const script = await bundleWorker({ entry: join(ROOT, "src/worker.ts"), outdir: join(dir, "gateway"), policyFiles: benchPolicyFiles(upstream.origin) });
  const gateway = await hostWorker({
    name: "tollgate",
    wranglerConfig: join(ROOT, "wrangler.toml"),
    script,
    persistDir: join(dir, "state"),
    inspectorPort: INSPECTOR_PORT,
  });
  try {
    const targets = (await (await fetch(`http://127.0.0.1:${INSPECTOR_PORT}/json/list`)).json()) as Array<{ webSocketDebuggerUrl: string; title?: string }>;
    const target = targets.find((t) => t.webSocketDebuggerUrl.includes("tollgate")) ?? targets[0]!;
    const cdp = await inspector(target.webSocketDebuggerUrl);
    await cdp.send("Profiler.enable");
    await cdp.send("Profiler.setSamplingInterval", { interval: 100 });
    for (const path of paths) {
      await runLoad(gateway.url + path, { connections: config.connections, durationSeconds: 1 });
      await cdp.send("Profiler.start");
      const load = await runLoad(gateway.url + path, { connections: config.connections, durationSeconds: config.durationSeconds });
      const { profile } = await cdp.send<{ profile: Profile }>("Profiler.stop");
      if (process.env.BENCH_PROFILE_OUT)
        writeFileSync(join(process.env.BENCH_PROFILE_OUT, `${path.replace(/\W/g, "") || "root"}.cpuprofile`), JSON.stringify(profile));
      process.stdout.write(`\n${path}: ${load.requestsPerSecond.toFixed(0)} req/s under the profiler; self time by function:\n`);
      for (const { name, share } of selfTimes(profile).slice(0, TOP)) process.stdout.write(`${(share * 100).toFixed(1).padStart(6)} %  ${name}\n`);
    }
    cdp.close();
  } finally {
    await gateway.close();
  }
} finally {
  await upstream.close();
  rmSync(dir, { recursive: true, force: true });
}
