// PLACEHOLDER until the management API lands (being written now); replaced before commit.
import type { Env } from "../env.ts";
import { ErrorCode, ServiceError } from "../errors.ts";
export function handleManagement(_request: Request, _env: Env, _ctx: ExecutionContext): Response {
  return new ServiceError(404, ErrorCode.notFound, "not yet").toResponse();
}
