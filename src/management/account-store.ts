/**
 * `AccountStore`: one SQLite-backed Durable Object per account, holding that account's management data.
 * A thin shell: it migrates the schema on start-up and hands each RPC call to the store modules.
 */

import { DurableObject } from "cloudflare:workers";
import type { Env } from "../env.ts";
import type { LimitOverride } from "../limiter/override-match.ts";
import type { ModuleKind, RouteModules } from "./modules.ts";
import type { Page, PageRequest } from "./pagination.ts";
import * as botUsers from "./store/bot-users.ts";
import { describeEdges, type EdgeFacts, type EdgeOutline } from "./store/edges-seen.ts";
import type { BotUserRecord } from "./store/bot-users.ts";
import { migrate } from "./store/migrations.ts";
import * as overrides from "./store/rate-limit-overrides.ts";
import * as routeModules from "./store/route-modules.ts";
import { rfc3339 } from "../time.ts";

export class AccountStore extends DurableObject<Env> {
  private readonly sql: SqlStorage;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    migrate(ctx.storage);
  }

  createBotUser(input: { name: string; active: boolean }): BotUserRecord {
    return botUsers.createBotUser(this.sql, input);
  }

  getBotUser(id: string): BotUserRecord | undefined {
    return botUsers.getBotUser(this.sql, id);
  }

  listBotUsers(request: PageRequest): Page<BotUserRecord> & { rowsRead: number } {
    return botUsers.listBotUsers(this.sql, request);
  }

  updateBotUser(id: string, patch: { name?: string; active?: boolean }): BotUserRecord | undefined {
    return botUsers.updateBotUser(this.sql, id, patch);
  }

  deleteBotUser(id: string): boolean {
    return botUsers.deleteBotUser(this.sql, id);
  }

  putRouteModule(edgeId: string, routeId: string, kind: ModuleKind, config: object): void {
    routeModules.putRouteModule(this.sql, edgeId, routeId, kind, config);
  }

  deleteRouteModule(edgeId: string, routeId: string, kind: ModuleKind): boolean {
    return routeModules.deleteRouteModule(this.sql, edgeId, routeId, kind);
  }

  getRouteModules(edgeId: string, routeId: string): RouteModules {
    return routeModules.getRouteModules(this.sql, edgeId, routeId);
  }

  createOverride(input: overrides.OverrideInput): overrides.OverrideRecord | overrides.OverrideRefusal {
    return this.ctx.storage.transactionSync(() => overrides.createOverride(this.sql, input));
  }

  getOverride(id: string): overrides.OverrideRecord | undefined {
    return overrides.getOverride(this.sql, id);
  }

  listOverrides(request: PageRequest): Page<overrides.OverrideRecord> {
    return overrides.listOverrides(this.sql, request);
  }

  updateOverride(id: string, patch: overrides.OverridePatch): overrides.OverrideRecord | undefined {
    return overrides.updateOverride(this.sql, id, patch);
  }

  deleteOverride(id: string): boolean {
    return overrides.deleteOverride(this.sql, id);
  }

  /** The overrides the gateway applies now (src/limiter/override-cache.ts reads them about every 250 ms per isolate). */
  liveOverrides(): LimitOverride[] {
    return overrides.liveOverrides(this.sql);
  }

  /** Creation times (first seen) and route modules of edges of policies/gateway.yaml, in one call. */
  describeEdges(edges: readonly EdgeOutline[]): EdgeFacts[] {
    return this.ctx.storage.transactionSync(() => describeEdges(this.sql, edges, rfc3339()));
  }
}

/** The store of an account (one Durable Object per account id). */
export function accountStore(env: Env, accountId: string): DurableObjectStub<AccountStore> {
  return env.ACCOUNT_STORE.getByName(accountId);
}
