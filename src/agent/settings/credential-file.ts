/**
 * Saves the credential into a config file, as `ngrok config add-authtoken` does: the file keeps its other
 * keys and comments; a missing file is created (mode 0600, it holds a secret) in Tollgate's format.
 */

import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { dirname } from "node:path";
import { parseDocument } from "yaml";
import { configFormat } from "./ngrok-config.ts";

export type SaveResult = { ok: true } | { ok: false; message: string };

/**
 * `field` is what the user asked for (ngrok's authtoken or api_key). Tollgate has one credential, the
 * API key: in an ngrok file both keys mean it, so both are set when both are present (they must agree).
 */
export async function saveCredential(file: string, field: "authtoken" | "api_key", value: string): Promise<SaveResult> {
  let text: string | undefined;
  try {
    text = await readFile(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") return { ok: false, message: `${file}: cannot read the config file: ${(error as Error).message}` };
  }
  const doc = parseDocument(text ?? "", { uniqueKeys: true });
  if (doc.errors.length > 0) return { ok: false, message: `${file}: invalid YAML, not changed: ${doc.errors[0].message.split("\n")[0]}` };
  const format = configFormat(doc.toJS());
  const section = format === "ngrok-v3" ? ["agent"] : [];
  if (format === "tollgate") doc.setIn(["api_key"], value);
  else {
    const keys = (["authtoken", "api_key"] as const).filter((key) => key === field || doc.hasIn([...section, key]));
    for (const key of keys) doc.setIn([...section, key], value);
  }
  try {
    await mkdir(dirname(file), { recursive: true, mode: 0o700 });
    const temporary = `${file}.${process.pid}.tmp`;
    await writeFile(temporary, String(doc), { mode: 0o600 });
    await rename(temporary, file);
  } catch (error) {
    return { ok: false, message: `${file}: cannot write the config file: ${(error as Error).message}` };
  }
  return { ok: true };
}
