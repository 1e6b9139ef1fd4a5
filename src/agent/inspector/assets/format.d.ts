// Types of format.js for the tests that run it in Node (the page itself loads format.js as is).

export type HeaderMap = Record<string, string[]>;

export function base64Bytes(text: string): Uint8Array;
export function splitMessage(bytes: Uint8Array): { head: string; body: Uint8Array };
export function looksLikeText(bytes: Uint8Array): boolean;
export function utf8(bytes: Uint8Array): string;
export function headerValue(headers: HeaderMap | undefined, name: string): string;
export function prettyJson(text: string, contentType?: string): string | null;
export function jsonTokens(pretty: string): Array<[string, string]>;
export function hexDump(bytes: Uint8Array, max?: number): string;
export function rawText(bytes: Uint8Array, max?: number): string;
export function formatDuration(ns: number): string;
export function formatBytes(n: number): string;
export function headerLines(headers: HeaderMap | undefined): string;
export function parseHeaderLines(text: string): { headers?: HeaderMap; error?: string };

interface SummaryLike {
  readonly status_code: number | null;
  readonly state: string;
  readonly uri: string;
  readonly method: string;
  readonly tunnel_name?: string;
}
export function statusClass(summary: SummaryLike): string;
export function statusLabel(summary: SummaryLike): string;
export function matchesFilter(summary: SummaryLike, filter: { path?: string; method?: string; status?: string; tunnel?: string }): boolean;
export function clockTime(rfc3339: string): string;
export function failureText(error: { code: string; message: string } | null | undefined): { title: string; detail: string; text: string };
export function apiErrorMessage(body: unknown, fallback: string): string;
export function replayField(message: string): "method" | "uri" | "headers" | "body" | null;
