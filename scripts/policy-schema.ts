/** `npm run policy:schema`: writes the JSON Schemas (from the zod schemas) that editors use for policies/. */

import { mkdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { z } from "zod";
import { gatewayConfigSchema } from "../src/gateway/gateway-config.ts";
import { trafficPolicyJsonSchema } from "../src/policy/schema.ts";

/** File name under schema/ → JSON text. */
export function jsonSchemas(): Record<string, string> {
  const gateway = z.toJSONSchema(gatewayConfigSchema, { io: "input", unrepresentable: "any" });
  return {
    "traffic-policy.schema.json": `${JSON.stringify({ title: "Tollgate traffic policy", ...trafficPolicyJsonSchema() }, null, 2)}\n`,
    "gateway.schema.json": `${JSON.stringify({ title: "Tollgate gateway (policies/gateway.yaml)", ...gateway }, null, 2)}\n`,
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const dir = resolve("schema");
  mkdirSync(dir, { recursive: true });
  for (const [name, text] of Object.entries(jsonSchemas())) writeFileSync(join(dir, name), text);
  console.log(
    `wrote ${Object.keys(jsonSchemas())
      .map((name) => `schema/${name}`)
      .join(", ")}`,
  );
}
