/** The zod schema of traffic policy documents: the single source for validation and the JSON Schema. */

import { z } from "zod";
import { type ActionDefinition, type ActionRegistry, actionRegistry } from "./actions/index.ts";
import { MAX_ACTIONS_PER_ENTRY, MAX_ENTRIES_PER_PHASE, MAX_EXPRESSIONS_PER_ENTRY } from "./limits.ts";

/** The gateway's action types by name (actions/index.ts registers them). */
export const actionDefinitions: ReadonlyMap<string, ActionDefinition> = actionRegistry.definitions;

/** The keys of the two phases in each naming style: Tollgate's, and ngrok's current one. */
export const PHASE_KEYS = {
  tollgate: { inbound: "inbound", outbound: "outbound" },
  ngrok: { inbound: "on_http_request", outbound: "on_http_response" },
} as const;

/** The schema of policy documents whose actions are `registry`'s: each action type's config schema is its own. */
export function trafficPolicySchemaOf(registry: ActionRegistry) {
  const actionSchema = z.discriminatedUnion(
    "type",
    [...registry.definitions.values()].map((action) =>
      z.strictObject({
        type: z.literal(action.type),
        config: action.configOptional ? action.config.optional() : action.config,
      }),
    ) as unknown as [z.ZodObject, ...z.ZodObject[]],
  );

  const entrySchema = z
    .strictObject({
      name: z.string({ error: "must be a string" }).max(1023, "must be shorter than 1024 characters").optional(),
      expressions: z
        .array(z.string({ error: "must be a string" }).min(1, "must not be empty"), { error: "must be a list of CEL strings" })
        .max(MAX_EXPRESSIONS_PER_ENTRY, `exceeds the limit of ${MAX_EXPRESSIONS_PER_ENTRY} expressions per entry`)
        .optional()
        .describe("CEL expressions; the entry runs only when all are true."),
      actions: z
        .array(actionSchema, { error: "must be a list of actions" })
        .min(1, "must have at least 1 action")
        .max(MAX_ACTIONS_PER_ENTRY, `exceeds the limit of ${MAX_ACTIONS_PER_ENTRY} actions per entry`),
    })
    // Named, so the JSON Schema holds it once ($defs) for the four phase keys.
    .meta({ id: "TrafficPolicyEntry" });

  const entriesSchema = z
    .array(entrySchema, { error: "must be a list of entries" })
    .max(MAX_ENTRIES_PER_PHASE, `exceeds the limit of ${MAX_ENTRIES_PER_PHASE} entries per phase`)
    .optional();

  return z
    .strictObject({
      inbound: entriesSchema.describe("Entries run on each request, before the upstream (ngrok: on_http_request)."),
      outbound: entriesSchema.describe("Entries run on each response (ngrok: on_http_response)."),
      on_http_request: entriesSchema.describe("ngrok's name of the inbound phase; do not mix with inbound/outbound."),
      on_http_response: entriesSchema.describe("ngrok's name of the outbound phase; do not mix with inbound/outbound."),
    })
    .describe(
      "A Tollgate traffic policy: entries run in order on requests (inbound or on_http_request) and responses (outbound or on_http_response); one naming style per document.",
    );
}

/** The schema of the gateway's policy documents. */
export const trafficPolicySchema = trafficPolicySchemaOf(actionRegistry);

export type EntryDocument = NonNullable<z.output<typeof trafficPolicySchema>["inbound"]>[number];

/** The JSON Schema editors use to complete policy files: either phase style, never both in one document. */
export function trafficPolicyJsonSchema(): Record<string, unknown> {
  const schema = z.toJSONSchema(trafficPolicySchema, { io: "input", unrepresentable: "any" }) as Record<string, unknown>;
  const mixes = Object.values(PHASE_KEYS.tollgate).flatMap((ours) => Object.values(PHASE_KEYS.ngrok).map((theirs) => ({ required: [ours, theirs] })));
  return { ...schema, not: { anyOf: mixes } };
}
