#!/usr/bin/env node
/**
 * Prints a token that policies/jwt-demo.yaml accepts: HS256 with the demo secret written in that policy, for
 * `node scripts/jwt-demo-token.mjs <subject> [plan] [minutes]`. Demo only: the secret is public.
 */

import { createHmac } from "node:crypto";
import { readFileSync } from "node:fs";
import { parse } from "yaml";

const [subject = "alice", plan = "free", minutes = "60"] = process.argv.slice(2);
const policy = parse(readFileSync(new URL("../policies/jwt-demo.yaml", import.meta.url), "utf8"));
const config = policy.on_http_request[0].actions[0].config;
const key = config.jws.keys.sources.inline[0];
const now = Math.floor(Date.now() / 1000);
const claims = {
  iss: config.issuer.allow_list[0].value,
  aud: config.audience.allow_list[0].value,
  sub: subject,
  plan,
  iat: now,
  exp: now + Number(minutes) * 60,
};
const part = (value) => Buffer.from(JSON.stringify(value)).toString("base64url");
const input = `${part({ alg: "HS256", typ: "JWT", kid: key.kid })}.${part(claims)}`;
console.log(`${input}.${createHmac("sha256", Buffer.from(key.k, "base64url")).update(input).digest("base64url")}`);
