/**
 * Global setup of the projects that start servers as child processes: a per-run directory where
 * test/support/processes.ts records each process group it starts, and a teardown that kills whatever is
 * still recorded there (a group whose test worker was killed before it could stop it).
 */

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { killRecordedGroups, RECORDS_ENV } from "./processes.ts";

/** Which vitest process made the directory: projects of one run share it, a vitest run inside a test makes its own. */
const OWNER_ENV = `${RECORDS_ENV}_OWNER`;

export default function setup() {
  if (process.env[OWNER_ENV] !== String(process.pid) || !process.env[RECORDS_ENV]) {
    // Workers are forked after global setup and inherit this environment.
    process.env[RECORDS_ENV] = mkdtempSync(join(tmpdir(), "tollgate-test-processes-"));
    process.env[OWNER_ENV] = String(process.pid);
  }
  const records = process.env[RECORDS_ENV]!;
  // Teardowns run once every test file is done, so the first one may kill everything still recorded.
  return async () => {
    const left = await killRecordedGroups(records).catch(() => []); // another project's teardown removed the directory
    if (left.length > 0) console.warn(`process groups left behind by a killed test worker, now killed: ${left.length} (${left.join(", ")})`);
    rmSync(records, { recursive: true, force: true });
  };
}
