/** What every action type provides: a config schema and a compiler from config to a runnable step. */

import type { z } from "zod";
import type { ExpressionCompiler } from "../compiled-expression.ts";
import type { ActionServices, Exchange, Phase } from "../exchange.ts";
import type { ActionResults } from "./results.ts";

export interface ActionContext {
  readonly phase: Phase;
  /** Default bucket/action name when the config gives none: its position, e.g. `inbound[0].actions[1]`. */
  readonly position: string;
  /**
   * Who wrote the policy: an operator (a file under policies/, run by a route) or a tenant (sent with a
   * tunnel). Absent: a tenant.
   */
  readonly origin?: "tenant" | "operator";
  /**
   * Compiles the action's own expressions (`${…}` fields, a rate-limit's cost and key), checked against the
   * registry the policy compiles with. Handed in rather than imported: cel.ts reads the registry, which
   * imports the actions.
   */
  readonly expressions: ExpressionCompiler;
}

export interface CompiledAction {
  readonly type: string;
  /** It reports rate-limit events to `services.decisions` (a tunnel's agent is told of them: tunnels/decision-trails.ts). */
  readonly reportsRateLimits?: boolean;
  /**
   * Runs the action. A returned Response ends the phase: inbound it is answered instead of
   * calling the upstream; outbound it replaces the upstream's response.
   */
  run(exchange: Exchange, services: ActionServices): Response | undefined | Promise<Response | undefined>;
}

/** Why an action cannot take a config its schema accepted: where inside the config, and what is wrong. */
export interface ConfigProblem {
  readonly path: ReadonlyArray<string | number>;
  readonly message: string;
}

/** True when `compiled` is the problem a compile answered instead of a step. */
export function isConfigProblem(compiled: CompiledAction | ConfigProblem): compiled is ConfigProblem {
  return !("run" in compiled);
}

/**
 * A bound on how many actions of one type, configured a certain way, one policy may hold (both phases
 * together): the policy is refused at the first one over, at `path` inside its config.
 */
export interface PerPolicyBound<Config> {
  readonly max: number;
  counts(config: Config): boolean;
  readonly path: ReadonlyArray<string | number>;
  readonly message: string;
}

/**
 * How a policy simulation (simulate/traced-policy.ts) runs an action and reads what it did; absent: it is run,
 * and a request it lets on is traced "continued".
 */
export interface ActionSimulation<Config> {
  /** Why the action is not run in a simulation (it would reach outside it), from its config; undefined: it is run. */
  skip?(config: Config): string | undefined;
  /** It checks the request: one it lets on is traced "allowed", not "continued". */
  readonly check?: boolean;
  /** Statuses of its own answers that say it refused the request ("denied"), beside 401 and 403. */
  readonly refusedStatuses?: readonly number[];
  /** How it let the request on, when not plainly: restrict-ips with `enforce: false` denied it in shadow. */
  passed?(exchange: Exchange): "shadow_denied" | undefined;
  /** It reports a rate-limit event: the trace carries the event's figures and outcome. */
  readonly rateLimit?: boolean;
}

export interface ActionDefinition<Config extends z.ZodType = z.ZodType> {
  readonly type: string;
  readonly config: Config;
  /** Whether `config` may be omitted. */
  readonly configOptional: boolean;
  /** The variables it sets for later expressions (`actions.svc.<name>.*`); absent: none. */
  readonly results?: ActionResults;
  readonly perPolicy?: PerPolicyBound<z.output<Config>>;
  /**
   * Compiles the step, once per policy load, or says what the schema cannot see (it depends on the phase, or an
   * expression or pattern of the config does not compile): a path inside `config` and a message.
   */
  compile(config: z.output<Config>, context: ActionContext): CompiledAction | ConfigProblem;
  readonly simulation?: ActionSimulation<z.output<Config>>;
}

export function defineAction<Config extends z.ZodType>(definition: ActionDefinition<Config>): ActionDefinition<Config> {
  return definition;
}

const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

export function isHeaderName(name: string): boolean {
  return HEADER_NAME.test(name);
}

/** What `Headers` accepts: no NUL or line break, nothing beyond Latin-1 (anything else throws at request time). */
const HEADER_VALUE = /^[^\0\r\n\u0100-\uffff]*$/;

export function isHeaderValue(value: string): boolean {
  return HEADER_VALUE.test(value);
}

export const HEADER_VALUE_MESSAGE = "is not a valid header value (no line breaks, NUL or characters beyond U+00FF)";
