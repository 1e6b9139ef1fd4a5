/**
 * CEL values as `${…}` interpolation writes them into text. Scalars are written as cel-go's `string()`
 * conversion writes them, since ngrok evaluates with cel-go: strings raw, ints and uints in decimal, doubles
 * in Go's shortest `%g` form (`1.5`, `1e+06`, `+Inf`), bools `true`/`false`, timestamps in RFC 3339, durations
 * in seconds (`1.5s`), bytes as UTF-8. ngrok does not document how it writes lists and maps; they are written
 * as JSON (bytes as base64, timestamps and durations as their strings). Writing stops once `max` characters
 * are written, so a value of any size costs at most that much.
 */

import { isCelList, isCelMap, isCelUint, type CelValue } from "@bufbuild/cel";

/** Lists and maps nested deeper than this are written as `"…"` (a value may nest what set-vars nested). */
export const MAX_TEXT_NESTING = 32;

interface Timestampish {
  readonly seconds: bigint;
  readonly nanos: number;
}

/** The protobuf message of a timestamp or duration value, if `value` is one. */
function wellKnown(value: unknown): { kind: "timestamp" | "duration"; message: Timestampish } | undefined {
  const reflect = value as { desc?: { typeName?: string }; message?: Timestampish };
  const typeName = reflect?.desc?.typeName;
  if (typeName === "google.protobuf.Timestamp" && reflect.message) return { kind: "timestamp", message: reflect.message };
  if (typeName === "google.protobuf.Duration" && reflect.message) return { kind: "duration", message: reflect.message };
  return undefined;
}

/** Go's `strconv.FormatFloat(x, 'g', -1, 64)`: shortest digits, exponent form below 1e-4 and from 1e+06. */
export function goDouble(x: number): string {
  if (Number.isNaN(x)) return "NaN";
  if (x === Number.POSITIVE_INFINITY) return "+Inf";
  if (x === Number.NEGATIVE_INFINITY) return "-Inf";
  if (x === 0) return Object.is(x, -0) ? "-0" : "0";
  // toExponential() without digits gives the shortest digits that read back as x, as Go's shortest does.
  const [mantissa, exponentText] = x.toExponential().split("e");
  const sign = mantissa.startsWith("-") ? "-" : "";
  const digits = mantissa.replace("-", "").replace(".", "");
  const exponent = Number(exponentText);
  if (exponent < -4 || exponent >= 6) {
    const fraction = digits.length > 1 ? `.${digits.slice(1)}` : "";
    const magnitude = String(Math.abs(exponent)).padStart(2, "0");
    return `${sign}${digits[0]}${fraction}e${exponent < 0 ? "-" : "+"}${magnitude}`;
  }
  if (exponent < 0) return `${sign}0.${"0".repeat(-exponent - 1)}${digits}`;
  const whole = digits.slice(0, exponent + 1).padEnd(exponent + 1, "0");
  const fraction = digits.slice(exponent + 1);
  return `${sign}${whole}${fraction ? `.${fraction}` : ""}`;
}

function nanosFraction(nanos: number): string {
  if (nanos === 0) return "";
  return `.${String(nanos).padStart(9, "0").replace(/0+$/, "")}`;
}

/** cel-go's string(timestamp): Go's RFC3339Nano in UTC, `2024-06-24T15:30:00Z`. */
function timestampText({ seconds, nanos }: Timestampish): string {
  const date = new Date(Number(seconds) * 1000);
  return `${date.toISOString().slice(0, 19)}${nanosFraction(nanos)}Z`;
}

/** cel-go's string(duration): seconds with the fraction it needs, `90s`, `1.5s`, `-0.25s`. */
function durationText({ seconds, nanos }: Timestampish): string {
  const negative = seconds < 0n || nanos < 0;
  const whole = seconds < 0n ? -seconds : seconds;
  return `${negative ? "-" : ""}${whole}${nanosFraction(Math.abs(nanos))}s`;
}

const utf8 = new TextDecoder();

function base64(bytes: Uint8Array): string {
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary);
}

/** A scalar as text, or undefined for lists and maps. */
function scalarText(value: CelValue): string | undefined {
  switch (typeof value) {
    case "string":
      return value;
    case "bigint":
      return value.toString();
    case "number":
      return goDouble(value);
    case "boolean":
      return value ? "true" : "false";
  }
  if (value === null) return "null";
  if (isCelUint(value)) return value.value.toString();
  if (value instanceof Uint8Array) return utf8.decode(value);
  const known = wellKnown(value);
  if (known) return known.kind === "timestamp" ? timestampText(known.message) : durationText(known.message);
  if (isCelList(value) || isCelMap(value)) return undefined;
  // a type value, type(x)
  return String(value);
}

/** Collects text up to `max` characters; `full` once more was offered than fits. */
class Writer {
  text = "";
  full = false;

  constructor(private readonly max: number) {}

  write(piece: string): void {
    if (this.full) return;
    const room = this.max - this.text.length;
    if (piece.length > room) {
      this.text += piece.slice(0, room);
      this.full = true;
    } else this.text += piece;
  }
}

function writeJson(value: CelValue, writer: Writer, depth: number): void {
  if (writer.full) return;
  if (depth > MAX_TEXT_NESTING) return writer.write('"…"');
  if (isCelList(value)) {
    writer.write("[");
    let first = true;
    for (const element of value) {
      if (writer.full) return;
      if (!first) writer.write(",");
      first = false;
      writeJson(element, writer, depth + 1);
    }
    return writer.write("]");
  }
  if (isCelMap(value)) {
    writer.write("{");
    let first = true;
    for (const [key, element] of value) {
      if (writer.full) return;
      if (!first) writer.write(",");
      first = false;
      writer.write(JSON.stringify(isCelUint(key) ? key.value.toString() : String(key)));
      writer.write(":");
      writeJson(element, writer, depth + 1);
    }
    return writer.write("}");
  }
  if (typeof value === "bigint") return writer.write(value.toString());
  if (isCelUint(value)) return writer.write(value.value.toString());
  if (typeof value === "number") return writer.write(Number.isFinite(value) ? JSON.stringify(value) : JSON.stringify(goDouble(value)));
  if (typeof value === "boolean" || value === null) return writer.write(String(value));
  if (value instanceof Uint8Array) return writer.write(JSON.stringify(base64(value)));
  writer.write(JSON.stringify(scalarText(value) ?? ""));
}

/** `value` as interpolation writes it, at most `max` characters of it. */
export function celText(value: CelValue, max: number): string {
  const scalar = scalarText(value);
  if (scalar !== undefined) return scalar.length > max ? scalar.slice(0, max) : scalar;
  const writer = new Writer(max);
  writeJson(value, writer, 0);
  return writer.text;
}
