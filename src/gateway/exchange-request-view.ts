/** The request as the policies of one exchange see it: headers copied and body read only on first use. */

import type { ExchangeRequest } from "../policy/exchange.ts";
import type { BodyAllowance } from "../policy/body-budget.ts";
import { RequestBody } from "../policy/request-body.ts";

/**
 * The request as policies see it. Its headers are a copy (actions and the upstream change them), made on
 * first use: a request rejected by a rate limit keyed by the client address never copies them. A class, not
 * an object literal with a getter: a flood builds one per request.
 */
export class ExchangeRequestView implements ExchangeRequest {
  readonly method: string;
  readonly host: string;
  private copied: Headers | undefined;

  /** `bodies`: the budget a body read holds its bytes of, and whose; absent: unbudgeted (tools, tests). */
  constructor(
    private readonly original: Request,
    readonly url: URL,
    private readonly bodies?: BodyAllowance,
  ) {
    this.method = original.method;
    this.host = url.hostname;
  }

  get headers(): Headers {
    return (this.copied ??= new Headers(this.original.headers));
  }

  private bodyReader: RequestBody | undefined;

  get body(): RequestBody {
    return (this.bodyReader ??= new RequestBody(this.original.body, this.original.headers.get("content-length"), undefined, this.bodies));
  }

  /** Gives a read body's bytes back to the isolate's budget: the upstream has taken them, or never will. */
  releaseBody(): void {
    this.bodyReader?.release();
  }

  /** The request to send on: the original, or, when an action read its body, the same carrying what was read. */
  forwardable(): Request {
    const body = this.bodyReader?.forwardBody();
    // null: the request had no body (a GET Twilio signs by its URL), so the original is whole as it is.
    return body === undefined || body === null ? this.original : new Request(this.original, { body });
  }
}
