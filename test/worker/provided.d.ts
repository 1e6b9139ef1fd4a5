/** Values the worker tests' global setup provides (see test/support/upstream-setup.ts). */
declare module "vitest" {
  export interface ProvidedContext {
    upstreamPort: number;
    tcpEchoPort: number;
    /** test/support/usage-upstream-setup.ts: an upstream answering with LLM usage. */
    usageUpstreamPort: number;
  }
}
export {};
