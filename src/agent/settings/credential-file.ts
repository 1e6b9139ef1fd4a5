/**
 * Saves the credential into a config file, as `ngrok config add-authtoken` does: the file keeps its other
 * keys and comments; a missing file is created (mode 0600, it holds a secret) in Tollgate's format.
 */

import { randomBytes } from "node:crypto";
import { mkdir, open, readlink, realpath, rename, unlink } from "node:fs/promises";
import { basename, dirname, join, resolve } from "node:path";
import { parseDocument } from "yaml";
import { formatIssue } from "../../policy/issues.ts";
import { readSource } from "../../policy/source.ts";
import { readBoundedFile } from "./bounded-file.ts";
import { MAX_CONFIG_FILE_BYTES } from "./load.ts";
import { configFormat } from "./ngrok-config.ts";

export type SaveResult = { ok: true } | { ok: false; message: string };

/**
 * `field` is what the user asked for (ngrok's authtoken or api_key). Tollgate has one credential, the
 * API key: in an ngrok file both keys mean it, so both are set when both are present (they must agree).
 */
export async function saveCredential(file: string, field: "authtoken" | "api_key", value: string): Promise<SaveResult> {
  const target = await writeTarget(file);
  if (!target.ok) return target;
  // The same reader and bound as every command that reads the file back.
  const read = await readBoundedFile(target.path, MAX_CONFIG_FILE_BYTES, "config file");
  if (!read.ok && !read.missing) return { ok: false, message: `${file}: ${read.message}` };
  const text = read.ok ? read.text : "";
  const doc = parseDocument(text, { uniqueKeys: true });
  if (doc.errors.length > 0) return { ok: false, message: `${file}: invalid YAML, not changed: ${doc.errors[0].message.split("\n")[0]}` };
  // readSource bounds aliases (a "billion laughs" file) and words the refusal as `config check` does.
  const source = readSource(text, file);
  if (!source.ok) return { ok: false, message: source.issues.map(formatIssue).join("\n") };
  const format = configFormat(source.document.value);
  const section = format === "ngrok-v3" ? ["agent"] : [];
  if (format === "tollgate") doc.setIn(["api_key"], value);
  else {
    const keys = (["authtoken", "api_key"] as const).filter((key) => key === field || doc.hasIn([...section, key]));
    for (const key of keys) doc.setIn([...section, key], value);
  }
  const saved = String(doc);
  if (Buffer.byteLength(saved) > MAX_CONFIG_FILE_BYTES) {
    const what = field === "authtoken" ? "the authtoken" : "the API key";
    return { ok: false, message: `${file}: with ${what} the config file would exceed the limit of ${MAX_CONFIG_FILE_BYTES} bytes; not changed` };
  }
  try {
    await replaceFile(target.path, saved);
  } catch (error) {
    return { ok: false, message: `${file}: cannot write the config file: ${(error as Error).message}` };
  }
  return { ok: true };
}

/**
 * The file to replace: `file` itself, or the file a symlink leads to, so a config kept elsewhere (dotfiles)
 * stays linked. A link that leads nowhere is refused: creating its target would write wherever it points.
 */
async function writeTarget(file: string): Promise<{ ok: true; path: string } | { ok: false; message: string }> {
  try {
    return { ok: true, path: await realpath(file) };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") return { ok: false, message: `${file}: cannot write the config file: ${(error as Error).message}` };
  }
  let link: string;
  try {
    link = await readlink(file);
  } catch {
    return { ok: true, path: file };
  }
  return { ok: false, message: `${file}: cannot write the config file: it is a symbolic link to ${resolve(dirname(file), link)}, which does not exist` };
}

/**
 * Replaces `target` whole: the text goes into a new file beside it, created exclusively ("wx": O_CREAT|O_EXCL,
 * which also refuses to follow a symlink) under a random name nobody can plant anything at, flushed to disk,
 * then renamed over the target, so a crash leaves the old file or the new one, never half of one.
 */
async function replaceFile(target: string, text: string): Promise<void> {
  await mkdir(dirname(target), { recursive: true, mode: 0o700 });
  const temporary = join(dirname(target), `.${basename(target)}.${randomBytes(12).toString("hex")}.tmp`);
  const handle = await open(temporary, "wx", 0o600);
  try {
    try {
      await handle.writeFile(text);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temporary, target);
  } catch (error) {
    await unlink(temporary).catch(() => undefined);
    throw error;
  }
}
