/**
 * `npx tsx bench/tunnel/tunnel-profile.ts [small|download|upload …]`: CPU profiles of the tunnel relay under one
 * workload at a time — workerd's through its inspector (V8's sampling profiler), the agent's with Node's
 * `--cpu-prof` — printed as the functions with the most self time in each. Profilers slow both processes:
 * use the shares, not the speed. BENCH_SECONDS (5) per workload; BENCH_PROFILE_OUT=dir keeps the profiles.
 */

import autocannon from "autocannon";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startBenchAgent } from "./tunnel-agent.ts";
import { startBenchEdge } from "./tunnel-edge.ts";
import { transfer } from "./tunnel-transfer.ts";
import { startTunnelUpstream } from "./tunnel-upstream.ts";
import { inspector, type Profile, selfTimes } from "../shared/cpu-profile.ts";

const INSPECTOR_PORT = 9241;
const TOP = 30;
const seconds = Number(process.env.BENCH_SECONDS ?? 5);
const workloads = process.argv.slice(2).length > 0 ? process.argv.slice(2) : ["small", "download", "upload"];

const print = (title: string, profile: Profile) => {
  process.stdout.write(`\n${title}\n`);
  for (const { name, share } of selfTimes(profile).slice(0, TOP)) process.stdout.write(`${(share * 100).toFixed(1).padStart(6)} %  ${name}\n`);
};

const out = process.env.BENCH_PROFILE_OUT;
for (const workload of workloads) {
  const dir = mkdtempSync(join(tmpdir(), "tollgate-tunnel-profile-"));
  process.env.BENCH_AGENT_NODE_ARGS = `--cpu-prof --cpu-prof-dir=${dir}`;
  const upstream = await startTunnelUpstream();
  const edge = await startBenchEdge(upstream.url, { inspectorPort: INSPECTOR_PORT });
  const agent = await startBenchAgent(edge.url, upstream.port);
  const target = { id: "tunnel", url: edge.url, host: new URL(agent.publicUrl).host };
  let edgeProfile: Profile;
  let done = "";
  try {
    const targets = (await (await fetch(`http://127.0.0.1:${INSPECTOR_PORT}/json/list`)).json()) as Array<{ webSocketDebuggerUrl: string }>;
    const cdp = await inspector((targets.find((t) => t.webSocketDebuggerUrl.includes("tollgate")) ?? targets[0]!).webSocketDebuggerUrl);
    await cdp.send("Profiler.enable");
    await cdp.send("Profiler.setSamplingInterval", { interval: 100 });
    const run = async (duration: number) => {
      if (workload === "small") {
        const result = await autocannon({ url: `${target.url}/`, connections: 50, duration, headers: { host: target.host } });
        return `${result.requests.average.toFixed(0)} req/s`;
      }
      const until = Date.now() + duration * 1000;
      const rates: number[] = [];
      while (Date.now() < until) rates.push(await transfer(target, workload === "upload" ? "upload" : "download"));
      return `${rates.length} transfers, mean ${(rates.reduce((a, b) => a + b, 0) / rates.length).toFixed(1)} MB/s`;
    };
    await run(1);
    await cdp.send("Profiler.start");
    done = await run(seconds);
    edgeProfile = (await cdp.send<{ profile: Profile }>("Profiler.stop")).profile;
    cdp.close();
  } finally {
    await agent.close();
    await edge.close();
    await upstream.close();
  }
  const agentFile = readdirSync(dir).find((name) => name.endsWith(".cpuprofile"));
  print(`${workload} (${done} under the profilers): workerd self time`, edgeProfile);
  if (agentFile)
    print(`${workload}: agent self time (whole process life, start-up included)`, JSON.parse(readFileSync(join(dir, agentFile), "utf8")) as Profile);
  if (out) {
    writeFileSync(join(out, `edge-${workload}.cpuprofile`), JSON.stringify(edgeProfile));
    if (agentFile) writeFileSync(join(out, `agent-${workload}.cpuprofile`), readFileSync(join(dir, agentFile)));
  }
  rmSync(dir, { recursive: true, force: true });
}
