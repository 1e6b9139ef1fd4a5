/**
 * What a public client gets when its tunnel session cannot relay the request: 502 ERR_SVC_8012 / 3004,
 * 503 ERR_SVC_716, and 431 / 414 / 501 ERR_SVC_3210 for a head past the relay's bounds, as a page for a browser and the JSON envelope for everyone else (see error-answer.ts).
 */

import { errorAnswer, prefersHtml } from "../error-answer.ts";
import { errorPageResponse } from "../error-page.ts";
import { newOperationId, OPERATION_ID_HEADER, type ServiceError } from "../errors.ts";
import type { StreamFailure } from "./edge-streams.ts";
import { requestHeadRefused, streamFailure } from "./errors.ts";
import { ResetCode, type HeadRefusal } from "../relay/index.ts";
import { sessionBusy, sessionFull } from "./stream-limits.ts";

/**
 * EdgeStreams answers a failed stream where it learns of the failure, without the client's request; the
 * session's relay() has the request and hands the answer on. This keeps each JSON answer's error between the
 * two, so relay() can give a browser the page instead. Per session object; held weakly, so an answer that is
 * dropped (its client gone) takes its entry with it.
 */
export class PublicFailures {
  private readonly errors = new WeakMap<Response, ServiceError>();

  /** EdgeStreams' `failureResponse`: the JSON answer to a stream that failed before the agent's response head. */
  streamFailed(failure: StreamFailure, host: string): Response {
    const error = failure.code === ResetCode.tooManyStreams ? sessionBusy(host, failure.message) : streamFailure(failure.code, failure.message, host);
    const response = error.toResponse();
    this.errors.set(response, error);
    return response;
  }

  /** EdgeStreams' `refuseHead`: the JSON answer to a request head past the relay's bounds (431, 414, 501). */
  headRefused(refused: HeadRefusal, host: string): Response {
    const error = requestHeadRefused(refused, host);
    const response = error.toResponse();
    this.errors.set(response, error);
    return response;
  }

  /** The stream's `answer` for the client of `request`: a failure's page (same operation id) when it prefers HTML. */
  forClient(answer: Response, request: Request): Response {
    const error = this.errors.get(answer);
    if (!error || !prefersHtml(request)) return answer;
    return errorPageResponse(error, answer.headers.get(OPERATION_ID_HEADER) ?? newOperationId());
  }

  /** The edge's own refusal when the session carries MAX_SESSION_STREAMS already; the request's body is not read. */
  async refuse(host: string, request: Request): Promise<Response> {
    await request.body?.cancel();
    return errorAnswer(sessionFull(host), request);
  }
}
