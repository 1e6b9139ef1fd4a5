/** Time formats shared by every layer. */

/** RFC 3339 UTC timestamp with second precision, as the reference API writes them. */
export function rfc3339(date: Date = new Date()): string {
  return date.toISOString().replace(/\.\d{3}Z$/, "Z");
}
