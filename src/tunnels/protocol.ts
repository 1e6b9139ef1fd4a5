/** The relay protocol as the Worker's modules name it: one definition, in src/relay/, shared with the agent. */

export * from "../relay/index.ts";
