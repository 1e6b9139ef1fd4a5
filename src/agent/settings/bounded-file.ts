/** The one way the agent reads a file a user names (config, traffic policy): a regular file only, and at most a stated number of bytes. */

import { constants, type Stats } from "node:fs";
import { open, stat } from "node:fs/promises";

/** `missing`: there is no such file (saving the credential then creates one). `message` names the kind of file, not its path. */
export type BoundedRead = { ok: true; text: string } | { ok: false; missing: boolean; message: string };

/** Bytes read at a time; a bound larger than this is read in several reads. */
const CHUNK_BYTES = 64 * 1024;

// O_NONBLOCK makes open() of a FIFO with no writer return at once instead of waiting for one forever (a
// FIFO can be swapped in after the stat below); O_NOCTTY keeps a terminal device from becoming ours.
// Windows has neither flag and no FIFOs of this kind.
const OPEN_FLAGS = constants.O_RDONLY | (constants.O_NONBLOCK ?? 0) | (constants.O_NOCTTY ?? 0);

function notRegular(stats: Stats): string | undefined {
  if (stats.isFile()) return undefined;
  const kind = stats.isDirectory()
    ? "a directory"
    : stats.isFIFO()
      ? "a FIFO (named pipe)"
      : stats.isCharacterDevice()
        ? "a character device"
        : stats.isBlockDevice()
          ? "a block device"
          : stats.isSocket()
            ? "a socket"
            : "something else";
  return `is ${kind}, not a regular file`;
}

/**
 * Reads `file` as UTF-8 text. Refuses anything but a regular file (after following links), and stops reading
 * once it has more than `maxBytes`: the size from stat is never trusted, so /dev/zero, a file that grows while
 * it is read, or one that says it is empty (/proc) all stay bounded. `what` names the file in messages
 * ("config file").
 */
export async function readBoundedFile(file: string, maxBytes: number, what: string): Promise<BoundedRead> {
  const cannot = (reason: string, missing = false): BoundedRead => ({ ok: false, missing, message: `cannot read the ${what}: ${reason}` });
  try {
    // Checked before opening too, so a device or FIFO is never opened (opening some devices has effects).
    const refused = notRegular(await stat(file));
    if (refused !== undefined) return cannot(refused);
    const handle = await open(file, OPEN_FLAGS);
    try {
      const swapped = notRegular(await handle.stat());
      if (swapped !== undefined) return cannot(swapped);
      const chunks: Buffer[] = [];
      let total = 0;
      for (;;) {
        // One byte past the bound is enough to know the file is too large; never more is read.
        const chunk = Buffer.allocUnsafe(Math.min(CHUNK_BYTES, maxBytes + 1 - total));
        const { bytesRead } = await handle.read(chunk, 0, chunk.length, null);
        if (bytesRead === 0) break;
        chunks.push(chunk.subarray(0, bytesRead));
        total += bytesRead;
        if (total > maxBytes) return { ok: false, missing: false, message: `the ${what} exceeds the limit of ${maxBytes} bytes` };
      }
      return { ok: true, text: Buffer.concat(chunks, total).toString("utf8") };
    } finally {
      await handle.close();
    }
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return cannot("no such file", true);
    // Windows refuses to open a directory rather than letting fstat say what it is.
    if (code === "EISDIR") return cannot("is a directory, not a regular file");
    return cannot((error as Error).message);
  }
}
