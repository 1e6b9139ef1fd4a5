/** Values the worker tests' global setup provides (see test/support/upstream-setup.ts). */
declare module "vitest" {
  export interface ProvidedContext {
    upstreamPort: number;
    tcpEchoPort: number;
    /** The same upstream as upstreamPort (test/support/upstream.ts), named for the tests of its LLM routes. */
    usageUpstreamPort: number;
  }
}

declare global {
  /** Vite's `import.meta.glob`, as the worker tests use it to bundle fixture files (workerd has no file system). */
  interface ImportMeta {
    glob<T = unknown>(pattern: string, options: { query?: string; import?: string; eager: true }): Record<string, T>;
  }
}

export {};
