/** One large transfer through a target, timed from the request to the last byte: a download, or an upload the upstream counts. */

import { request } from "node:http";
import { BIG_BYTES, DOWNLOAD_PATH, UPLOAD_PATH } from "./tunnel-upstream.ts";

export interface TransferTarget {
  readonly id: string;
  /** Base URL the request goes to. */
  readonly url: string;
  /** Host header, when it differs from the URL's. */
  readonly host?: string;
}

export type Direction = "download" | "upload";

const uploadBody = Buffer.alloc(BIG_BYTES, 0x62);
/** Written in pieces as a client streaming a file would, not in one call. */
const UPLOAD_PIECE = 256 * 1024;

/** MB/s (10^6 bytes per second) of one transfer; rejects when the bytes or status are not what was sent. */
export function transfer(target: TransferTarget, direction: Direction): Promise<number> {
  const url = new URL(direction === "download" ? DOWNLOAD_PATH : UPLOAD_PATH, target.url);
  const started = process.hrtime.bigint();
  const rate = () => BIG_BYTES / 1e6 / (Number(process.hrtime.bigint() - started) / 1e9);
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = target.host ? { host: target.host } : {};
    if (direction === "upload") Object.assign(headers, { "content-type": "application/octet-stream", "content-length": String(BIG_BYTES) });
    const req = request({ host: url.hostname, port: url.port, path: url.pathname, method: direction === "download" ? "GET" : "POST", headers }, (response) => {
      const chunks: Buffer[] = [];
      let bytes = 0;
      response.on("data", (chunk: Buffer) => {
        bytes += chunk.length;
        if (direction === "upload") chunks.push(chunk);
      });
      response.on("end", () => {
        const ok =
          response.statusCode === 200 && (direction === "download" ? bytes === BIG_BYTES : Buffer.concat(chunks).toString("utf8") === String(BIG_BYTES));
        if (!ok) {
          const seen = direction === "download" ? `${bytes} bytes` : `answer ${Buffer.concat(chunks).toString("utf8").slice(0, 200)}`;
          return reject(new Error(`${target.id} ${direction}: status ${response.statusCode}, ${seen}`));
        }
        resolve(rate());
      });
      response.on("error", reject);
    });
    req.on("error", reject);
    if (direction === "download") {
      req.end();
      return;
    }
    let offset = 0;
    const writeMore = () => {
      while (offset < BIG_BYTES) {
        const piece = uploadBody.subarray(offset, offset + UPLOAD_PIECE);
        offset += piece.length;
        if (!req.write(piece)) return void req.once("drain", writeMore);
      }
      req.end();
    };
    writeMore();
  });
}
