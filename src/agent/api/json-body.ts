/** The agent API takes JSON bodies only: a cross-site form cannot send application/json without a preflight (CSRF defence). */

import { AgentApiError, AgentErrorCode } from "./errors.ts";

const MAX_BODY_BYTES = 1024 * 1024;

/** Reads a JSON request body; a wrong Content-Type is 415, an unparsable body is 400 with `code`. */
export async function readJsonBody(request: Request, code: number, message: string): Promise<unknown> {
  const type = request.headers.get("content-type") ?? "";
  if (!/^application\/json\s*(;|$)/i.test(type)) {
    throw new AgentApiError(
      415,
      AgentErrorCode.unsupportedMediaType,
      "the body must be JSON (Content-Type: application/json)",
      `got Content-Type ${JSON.stringify(type)}`,
    );
  }
  const text = await request.text();
  if (text.length > MAX_BODY_BYTES) throw new AgentApiError(413, code, message, `the body is larger than ${MAX_BODY_BYTES} bytes`);
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new AgentApiError(400, code, message, `the body is not valid JSON: ${(error as Error).message}`);
  }
}
