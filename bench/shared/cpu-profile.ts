/** What the profiling benches share: V8 CPU profiles, their self time by function, and a DevTools Protocol client. */

import WebSocket from "ws";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

/** A V8 CPU profile, as `Profiler.stop` and Node's `--cpu-prof` write it. */
export interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** Each function's share of the sampled time spent in itself, largest first. */
export function selfTimes(profile: Profile): Array<{ name: string; share: number }> {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const time = new Map<string, number>();
  let total = 0;
  profile.samples.forEach((id, i) => {
    const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
    const name = `${functionName || "(anonymous)"} ${url ? `${url.split("/").pop()}:${lineNumber + 1}` : ""}`.trim();
    const delta = profile.timeDeltas[i] ?? 0;
    time.set(name, (time.get(name) ?? 0) + delta);
    total += delta;
  });
  return [...time].map(([name, t]) => ({ name, share: t / total })).sort((a, b) => b.share - a.share);
}

/** A minimal Chrome DevTools Protocol client over one WebSocket (workerd's inspector). */
export async function inspector(url: string) {
  const socket = new WebSocket(url);
  await new Promise((done, fail) => socket.once("open", done).once("error", fail));
  let next = 1;
  const pending = new Map<number, { done: (result: unknown) => void; fail: (error: Error) => void }>();
  socket.on("message", (data) => {
    const message = JSON.parse(String(data)) as { id?: number; result?: unknown; error?: { message: string } };
    if (message.id === undefined) return;
    const waiter = pending.get(message.id);
    pending.delete(message.id);
    if (message.error) waiter?.fail(new Error(message.error.message));
    else waiter?.done(message.result);
  });
  return {
    send<T>(method: string, params: object = {}): Promise<T> {
      const id = next++;
      socket.send(JSON.stringify({ id, method, params }));
      return new Promise<T>((done, fail) => pending.set(id, { done: done as (result: unknown) => void, fail }));
    },
    close: () => socket.close(),
  };
}
