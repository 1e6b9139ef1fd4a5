import { describe, expect, it } from "vitest";
import { ErrorCode, ServiceError } from "../../src/errors.ts";
import { MAX_ACCEPT_CHARS, errorAnswer, prefersHtml } from "../../src/error-answer.ts";

const FIREFOX = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";
const CHROME = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7";

const request = (accept?: string) => new Request("http://gw.test/", accept === undefined ? {} : { headers: { accept } });

describe("which clients get the HTML page", () => {
  it.each([
    ["Firefox's navigation", FIREFOX],
    ["Chrome's navigation", CHROME],
    ["text/html alone", "text/html"],
    ["text/html above JSON by q", "application/json;q=0.5, text/html"],
    ["text/* above JSON by q", "text/*, application/json;q=0.1"],
  ])("%s: HTML", (_, accept) => {
    expect(prefersHtml(request(accept))).toBe(true);
  });

  it.each([
    ["no Accept (curl's default is */*)", undefined],
    ["*/*", "*/*"],
    ["application/json", "application/json"],
    ["JSON above HTML by q", "text/html;q=0.5, application/json"],
    ["JSON first at equal q", "application/json, text/html"],
    ["HTML refused with q=0", "text/html;q=0, */*"],
    ["an empty Accept", ""],
    ["a malformed Accept", ";;;,,,=q"],
  ])("%s: JSON", (_, accept) => {
    expect(prefersHtml(request(accept))).toBe(false);
  });

  it(`reads an Accept header over ${MAX_ACCEPT_CHARS} characters as absent`, () => {
    const long = `text/html, ${"x/y;q=0.1, ".repeat(200)}`;
    expect(long.length).toBeGreaterThan(MAX_ACCEPT_CHARS);
    expect(prefersHtml(request(long))).toBe(false);
  });
});

describe("errorAnswer", () => {
  const error = new ServiceError(404, ErrorCode.noRoute, "No route.", { details: { host: "gw.test" }, headers: { "x-extra": "1" } });

  it("answers an API client the envelope toResponse renders, byte for byte and header for header", async () => {
    const answered = errorAnswer(error, request("*/*"), "op_1");
    const direct = error.toResponse("op_1");
    expect(answered.status).toBe(direct.status);
    expect(Object.fromEntries(answered.headers)).toEqual(Object.fromEntries(direct.headers));
    expect(await answered.text()).toBe(await direct.text());
  });

  it("answers a browser the page, with the advice given when the error has none", async () => {
    const answered = errorAnswer(error, request(FIREFOX), "op_1", { title: "Fallback title", steps: ["Do this."] });
    expect(answered.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(answered.headers.get("x-extra")).toBe("1");
    expect(await answered.text()).toContain("<h1>Fallback title</h1>");
  });
});
