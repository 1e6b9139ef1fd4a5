/** Bot users in an account's SQLite database: plain functions over `SqlStorage`. */

import { newId } from "../../ids.ts";
import type { Page, PageRequest } from "../pagination.ts";
import { rfc3339 } from "../../time.ts";

export const BOT_USER_ID_PREFIX = "bot";

export interface BotUserRecord {
  id: string;
  name: string;
  active: boolean;
  created_at: string;
}

type BotUserRow = { id: string; name: string; active: number; created_at: string };

function fromRow(row: BotUserRow): BotUserRecord {
  return { id: row.id, name: row.name, active: row.active !== 0, created_at: row.created_at };
}

export function createBotUser(sql: SqlStorage, input: { name: string; active: boolean }): BotUserRecord {
  const record: BotUserRecord = { id: newId(BOT_USER_ID_PREFIX), name: input.name, active: input.active, created_at: rfc3339() };
  sql.exec("INSERT INTO bot_users (id, name, active, created_at) VALUES (?, ?, ?, ?)", record.id, record.name, record.active ? 1 : 0, record.created_at);
  return record;
}

export function getBotUser(sql: SqlStorage, id: string): BotUserRecord | undefined {
  const row = sql.exec<BotUserRow>("SELECT id, name, active, created_at FROM bot_users WHERE id = ?", id).toArray()[0];
  return row && fromRow(row);
}

/** The list query: keyset pagination on the primary key, so a page reads at most `limit + 1` rows. */
export const LIST_BOT_USERS_SQL = "SELECT id, name, active, created_at FROM bot_users WHERE id < ? ORDER BY id DESC LIMIT ?";

/** Newest first. `rowsRead` is what SQLite reports, so tests can check a page costs the same anywhere in the list. */
export function listBotUsers(sql: SqlStorage, request: PageRequest): Page<BotUserRecord> & { rowsRead: number } {
  // "~" sorts after every base62 character, so without before_id the bound admits every id.
  const cursor = sql.exec<BotUserRow>(LIST_BOT_USERS_SQL, request.beforeId ?? `${BOT_USER_ID_PREFIX}_~`, request.limit + 1);
  const rows = cursor.toArray();
  return { items: rows.slice(0, request.limit).map(fromRow), hasMore: rows.length > request.limit, rowsRead: cursor.rowsRead };
}

export function updateBotUser(sql: SqlStorage, id: string, patch: { name?: string; active?: boolean }): BotUserRecord | undefined {
  const current = getBotUser(sql, id);
  if (!current) return undefined;
  const next: BotUserRecord = { ...current, name: patch.name ?? current.name, active: patch.active ?? current.active };
  sql.exec("UPDATE bot_users SET name = ?, active = ? WHERE id = ?", next.name, next.active ? 1 : 0, id);
  return next;
}

export function deleteBotUser(sql: SqlStorage, id: string): boolean {
  return sql.exec("DELETE FROM bot_users WHERE id = ?", id).rowsWritten > 0;
}
