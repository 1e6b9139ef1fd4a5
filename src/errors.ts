/** The one error type of the gateway and the management API, and the JSON envelope it renders to. */

import { newId } from "./ids.ts";

export const OPERATION_ID_HEADER = "x-operation-id";

/** Stable error numbers; where the reference service has a number for the case, it is used. */
export const ErrorCode = {
  missingCredentials: 200,
  invalidCredentials: 203,
  notFound: 204,
  methodNotAllowed: 205,
  unsupportedMediaType: 212,
  unparseableBody: 213,
  unknownField: 214,
  invalidValue: 215,
  unsupportedVersion: 217,
  missingVersion: 218,
  rateLimited: 226,
  pageSizeOutOfRange: 233,
  denied: 300,
  noRoute: 301,
  upstreamUnavailable: 302,
  circuitOpen: 303,
  upstreamTimeout: 304,
  /** A webhook failed verify-webhook (ngrok's ERR_NGROK_3204); its body too large to verify answers 413 with it. */
  webhookUnverified: 3204,
  /** jwt-validation: the token is not valid (ngrok's ERR_NGROK_3401, "Your request lacks valid credentials"). */
  jwtInvalid: 3401,
  /** jwt-validation: no token where the config says (ngrok's ERR_NGROK_3406, "Token could not be found in request"). */
  jwtMissing: 3406,
  /** jwt-validation: no JWKS could be fetched to judge the token, so it is refused (ngrok's 7186: a JKU served no JWKS). */
  jwksUnavailable: 7186,
  internal: 500,
} as const;

export type ErrorDetails = Record<string, unknown>;

/** What a person who meets the error in a browser should know: a heading and what to do (the HTML page only). */
export interface ErrorAdvice {
  readonly title: string;
  readonly steps: readonly string[];
}

export interface ErrorEnvelope {
  error_code: string;
  status_code: number;
  msg: string;
  details: ErrorDetails & { operation_id: string };
}

/** What a ServiceError carries besides its status, code and message. */
export interface ServiceErrorOptions {
  /** Fields of the envelope's `details`, beside the operation id. */
  readonly details?: ErrorDetails;
  /** Headers the answer carries (retry-after, allow, …). */
  readonly headers?: Record<string, string>;
  /** Words for the HTML page a browser gets instead (error-answer.ts); the envelope leaves them out. */
  readonly advice?: ErrorAdvice;
  /** What went wrong underneath, for logs (Error's own `cause`); never sent to the client. */
  readonly cause?: unknown;
}

/** An error that ends a request with an HTTP status and a JSON envelope. */
export class ServiceError extends Error {
  readonly details: ErrorDetails;
  readonly headers: Record<string, string>;
  readonly advice?: ErrorAdvice;

  constructor(
    readonly status: number,
    readonly code: number,
    message: string,
    { details = {}, headers = {}, advice, cause }: ServiceErrorOptions = {},
  ) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = "ServiceError";
    this.details = details;
    this.headers = headers;
    this.advice = advice;
  }

  /** `ERR_SVC_<code>`: what clients match on and people search for. */
  get errorCode(): string {
    return `ERR_SVC_${this.code}`;
  }

  envelope(operationId: string): ErrorEnvelope {
    return {
      error_code: this.errorCode,
      status_code: this.status,
      msg: this.message,
      details: { ...this.details, operation_id: operationId },
    };
  }

  toResponse(operationId: string = newOperationId()): Response {
    return Response.json(this.envelope(operationId), {
      status: this.status,
      headers: { ...this.headers, [OPERATION_ID_HEADER]: operationId },
    });
  }
}

export function newOperationId(): string {
  return newId("op");
}
