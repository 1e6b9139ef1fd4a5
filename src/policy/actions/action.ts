/** What every action type provides: a config schema and a compiler from config to a runnable step. */

import type { z } from "zod";
import type { ActionServices, Exchange, Phase } from "../exchange.ts";

export interface ActionContext {
  readonly phase: Phase;
  /** Default bucket/action name when the config gives none: its position, e.g. `inbound[0].actions[1]`. */
  readonly position: string;
}

export interface CompiledAction {
  readonly type: string;
  /**
   * Runs the action. A returned Response ends the phase: inbound it is answered instead of
   * calling the upstream; outbound it replaces the upstream's response.
   */
  run(exchange: Exchange, services: ActionServices): Response | undefined | Promise<Response | undefined>;
}

export interface ActionDefinition<Config extends z.ZodType = z.ZodType> {
  readonly type: string;
  readonly config: Config;
  /** Whether `config` may be omitted. */
  readonly configOptional: boolean;
  compile(config: z.output<Config>, context: ActionContext): CompiledAction;
}

export function defineAction<Config extends z.ZodType>(definition: ActionDefinition<Config>): ActionDefinition<Config> {
  return definition;
}

const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

export function isHeaderName(name: string): boolean {
  return HEADER_NAME.test(name);
}
