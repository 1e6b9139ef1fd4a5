/**
 * `basic-auth` (as ngrok's): the request must carry `Authorization: Basic …` with one of up to 10 allowed
 * `username:password` credentials (the first colon divides them; a password of 8 … 128 characters), else 401
 * with `WWW-Authenticate: Basic realm="…"` (default realm `ngrok`), or with `enforce: false` only the result
 * variables `actions.svc.basic_auth.credentials.*` (presented, username, authorized). A credential may
 * interpolate `${…}` on either side of its colon or be one `${…}` entirely. Compared in constant time
 * (basic-credentials.ts); neither the credentials nor the presented password are ever logged.
 */

import { z } from "zod";
import { ErrorCode, ServiceError } from "../../errors.ts";
import { BOOL, STRING } from "../cel-types.ts";
import type { ActionServices, Exchange } from "../exchange.ts";
import type { PathSegment } from "../issues.ts";
import { splitTemplate } from "../template-syntax.ts";
import { defineAction, type ActionContext } from "./action.ts";
import { credentialDigest, matchesAny, presentedCredentials } from "./basic-credentials.ts";
import { compileFields, FieldRun, type InterpolatedField } from "./interpolated-fields.ts";
import { declareResults } from "./results.ts";

/** Allowed credentials of one action (ngrok's maximum). */
export const MAX_BASIC_CREDENTIALS = 10;
/** Characters of a password (ngrok's bounds) and of a user name. */
export const MIN_BASIC_PASSWORD_CHARS = 8;
export const MAX_BASIC_PASSWORD_CHARS = 128;
export const MAX_BASIC_USERNAME_CHARS = 128;
/** Characters of a realm (ngrok's maximum); printable ASCII without `"` and `\`, so it is one quoted-string. */
export const MAX_BASIC_REALM_CHARS = 128;

const MAX_CREDENTIAL_CHARS = MAX_BASIC_USERNAME_CHARS + 1 + MAX_BASIC_PASSWORD_CHARS;

/** Why a `user:password` (as written, or as interpolated) is not one; undefined when it is. */
function credentialProblem(user: string, password: string): string | undefined {
  if (user.length < 1 || user.length > MAX_BASIC_USERNAME_CHARS) return `must have a user name of 1 to ${MAX_BASIC_USERNAME_CHARS} characters`;
  if (password.length < MIN_BASIC_PASSWORD_CHARS || password.length > MAX_BASIC_PASSWORD_CHARS) {
    return `must have a password of ${MIN_BASIC_PASSWORD_CHARS} to ${MAX_BASIC_PASSWORD_CHARS} characters`;
  }
  return undefined;
}

const credentialSchema = z.string({ error: "must be a string" }).superRefine((text, context) => {
  if (text.includes("${")) return; // checked when its expressions compile (compileCredential)
  const colon = text.indexOf(":");
  const problem = colon < 0 ? "must be username:password" : credentialProblem(text.slice(0, colon), text.slice(colon + 1));
  if (problem) context.addIssue({ code: "custom", message: problem });
});

export const basicAuthConfig = z.strictObject({
  credentials: z
    .array(credentialSchema, { error: "must be a list of username:password strings" })
    .min(1, "must have at least 1 credential")
    .max(MAX_BASIC_CREDENTIALS, `exceeds the limit of ${MAX_BASIC_CREDENTIALS} credentials`)
    .describe("Allowed username:password pairs; either side may interpolate ${expression}, or the whole pair be one."),
  realm: z
    .string({ error: "must be a string" })
    .max(MAX_BASIC_REALM_CHARS, `must be at most ${MAX_BASIC_REALM_CHARS} characters`)
    .regex(/^[\x20\x21\x23-\x5b\x5d-\x7e]*$/, 'must be printable ASCII without " or \\')
    .default("ngrok")
    .describe("The realm of WWW-Authenticate; default ngrok."),
  enforce: z.boolean({ error: "must be a boolean" }).default(true).describe("false: set the result variables but let the request through."),
});

type Config = z.output<typeof basicAuthConfig>;

/** One allowed credential: fixed text (its digest made once), or interpolated (made per request). */
type Credential =
  | { readonly fixed: string }
  | { readonly whole: InterpolatedField }
  | { readonly user: InterpolatedField; readonly password: InterpolatedField };

type Compiled = { ok: true; credentials: Credential[] } | { ok: false; path: readonly PathSegment[]; message: string };

/** Splits an interpolated credential at its first colon outside `${…}`, as ngrok requires it to have one. */
function compileCredential(
  text: string,
  index: number,
  context: ActionContext,
): { ok: true; credential: Credential } | { ok: false; path: PathSegment[]; message: string } {
  const path: PathSegment[] = ["credentials", index];
  if (!text.includes("${")) return { ok: true, credential: { fixed: text } };
  const split = splitTemplate(text);
  if (!split.ok) return { ok: false, path, message: split.message };
  let offset = 0;
  let colon = -1;
  for (const part of split.parts) {
    if ("literal" in part && part.literal.includes(":")) {
      colon = offset + part.literal.indexOf(":");
      break;
    }
    offset += "literal" in part ? part.literal.length : part.expression.length + 3;
  }
  const alone = split.parts.length === 1;
  if (colon < 0 && !alone) {
    return { ok: false, path, message: "must be username:password with the colon outside ${…}, or one ${…} that gives username:password" };
  }
  const halves = colon < 0 ? [text] : [text.slice(0, colon), text.slice(colon + 1)];
  const fields = compileFields(
    halves.map((half) => [path, half] as const),
    context,
  );
  if (!fields.ok) return { ok: false, path, message: fields.message };
  for (const [i, half] of halves.entries()) {
    if (fields.fields[i].template.dynamic) continue;
    const problem = i === 0 ? credentialProblem(half, "x".repeat(MIN_BASIC_PASSWORD_CHARS)) : credentialProblem("x", half);
    if (problem) return { ok: false, path, message: problem };
  }
  const [user, password] = fields.fields;
  return { ok: true, credential: password ? { user, password } : { whole: user } };
}

const compiledCredentials = (config: Config, context: ActionContext): Compiled => {
  const credentials: Credential[] = [];
  for (const [index, text] of config.credentials.entries()) {
    const compiled = compileCredential(text, index, context);
    if (!compiled.ok) return compiled;
    credentials.push(compiled.credential);
  }
  return { ok: true, credentials };
};

/** The `user:password` an interpolated credential gives this request, or undefined when it gives none. */
function rendered(credential: Credential, run: FieldRun): string | undefined {
  if ("fixed" in credential) return credential.fixed;
  const whole =
    "whole" in credential
      ? run.render(credential.whole, MAX_CREDENTIAL_CHARS + 1)
      : `${run.render(credential.user, MAX_BASIC_USERNAME_CHARS + 1)}:${run.render(credential.password, MAX_BASIC_PASSWORD_CHARS + 1)}`;
  const colon = whole.indexOf(":");
  return colon >= 0 && credentialProblem(whole.slice(0, colon), whole.slice(colon + 1)) === undefined ? whole : undefined;
}

/** What the last basic-auth found (ngrok's `actions.ngrok.basic_auth.credentials.*`); never the password. */
export interface BasicAuthVars {
  credentials: { presented: boolean; username: string; authorized: boolean };
}

declare module "./results.ts" {
  interface ActionVars {
    basic_auth: BasicAuthVars;
  }
}

const basicAuthResults = declareResults<BasicAuthVars>("basic_auth", { credentials: { presented: BOOL, username: STRING, authorized: BOOL } }, () => ({
  credentials: { presented: false, username: "", authorized: false },
}));

export const basicAuthAction = defineAction({
  type: "basic-auth",
  config: basicAuthConfig,
  configOptional: false,
  results: basicAuthResults,
  simulation: { check: true },
  compile(config, context) {
    if (context.phase !== "inbound") return { path: [], message: "runs only on requests (inbound, ngrok's on_http_request), as ngrok's does" };
    const compiled = compiledCredentials(config, context);
    if (!compiled.ok) return { path: compiled.path, message: compiled.message };
    const fixed = compiled.credentials.filter((credential) => "fixed" in credential);
    const interpolated = compiled.credentials.filter((credential) => !("fixed" in credential));
    // Digests of the written credentials: made once per compiled policy, on its first request.
    let fixedDigests: Promise<Uint8Array[]> | undefined;
    const challenge = { "www-authenticate": `Basic realm="${config.realm}"` };
    const refuse = (code: number, message: string) =>
      new ServiceError(401, code, message, { details: { action: context.position }, headers: challenge }).toResponse();
    return {
      type: "basic-auth",
      async run(exchange: Exchange, services: ActionServices) {
        const vars = exchange.vars.basic_auth.credentials;
        const presented = presentedCredentials(exchange.request.headers.get("authorization"));
        vars.presented = presented.presented;
        vars.username = "username" in presented ? presented.username : "";
        vars.authorized = false;
        if (!presented.presented) return config.enforce ? refuse(ErrorCode.missingCredentials, "This endpoint requires HTTP Basic credentials.") : undefined;
        if ("malformed" in presented) return config.enforce ? refuse(ErrorCode.invalidCredentials, "The HTTP Basic credentials are malformed.") : undefined;
        fixedDigests ??= Promise.all(fixed.map((credential) => credentialDigest((credential as { fixed: string }).fixed)));
        const run = new FieldRun(exchange, services);
        const current = interpolated.flatMap((credential) => rendered(credential, run) ?? []);
        const allowed = [...(await fixedDigests), ...(await Promise.all(current.map(credentialDigest)))];
        vars.authorized = matchesAny(await credentialDigest(presented.credential), allowed);
        if (vars.authorized || !config.enforce) return undefined;
        return refuse(ErrorCode.invalidCredentials, "The HTTP Basic credentials are not valid.");
      },
    };
  },
});
