/**
 * `req.user_agent` (the User-Agent header, a string) and its parsed parts `req.user_agent.name`, `.version`,
 * `.os`, … (the hidden variable `@req.user_agent`, parsed only when an expression reads it). A small hand
 * parser of the first MAX_USER_AGENT_CHARS characters: the common browsers, operating systems and bots by
 * their well-known tokens, each found with a linear pattern. Not a device database: an agent it does not
 * know gets empty strings and false, never an error.
 */

import { BOOL, record, STRING } from "../cel-types.ts";
import type { Exchange } from "../exchange.ts";
import type { VariableFamily } from "./family.ts";

/** Characters of the User-Agent header parsed; the rest is ignored (real agents are under 300). */
export const MAX_USER_AGENT_CHARS = 512;

export const USER_AGENT_FIELDS = record("req.user_agent", {
  name: STRING,
  version: STRING,
  os: STRING,
  os_version: STRING,
  device: STRING,
  is_mobile: BOOL,
  is_tablet: BOOL,
  is_desktop: BOOL,
  is_bot: BOOL,
  url: STRING,
});

export interface UserAgent {
  name: string;
  version: string;
  os: string;
  os_version: string;
  device: string;
  is_mobile: boolean;
  is_tablet: boolean;
  is_desktop: boolean;
  is_bot: boolean;
  url: string;
}

/** Browsers by token, most specific first (Edge and Opera also say Chrome; Chrome also says Safari). */
const BROWSERS: ReadonlyArray<readonly [name: string, token: RegExp]> = [
  ["Edge", /\bEdg(?:e|A|iOS)?\/([\d.]{1,32})/],
  ["Opera", /\bOPR\/([\d.]{1,32})/],
  ["Samsung Internet", /\bSamsungBrowser\/([\d.]{1,32})/],
  ["Firefox", /\b(?:Firefox|FxiOS)\/([\d.]{1,32})/],
  ["Chrome", /\b(?:Chrome|CriOS)\/([\d.]{1,32})/],
  ["Safari", /\bVersion\/([\d.]{1,32}).{0,64}\bSafari\//],
  ["Internet Explorer", /\b(?:MSIE |rv:)([\d.]{1,32})\b.{0,64}\bTrident\/|\bMSIE ([\d.]{1,32})/],
];

/** Bots by token: crawlers name themselves; HTTP libraries and command-line clients count as bots too. */
const BOT = /bot\b|crawl|spider|slurp|\bcurl\/|\bwget\/|python-requests|python-urllib|go-http-client|\bokhttp\/|\bjava\/|headlesschrome|\bphantomjs/i;
/** `Name/1.2` at the start: what bots and libraries put first. */
const PRODUCT = /^([A-Za-z][\w .-]{0,63}?)\/([\w.-]{1,32})/;
const BOT_NAME = /([\w-]{0,63}(?:bot|crawler|spider)[\w-]{0,31})(?:\/([\w.-]{1,32}))?/i;
const URL_IN_AGENT = /\+?(https?:\/\/[^\s;)]{1,200})/;

const OPERATING_SYSTEMS: ReadonlyArray<readonly [name: string, token: RegExp]> = [
  ["iOS", /\b(?:iPhone|CPU) OS (\d{1,4}(?:_\d{1,4}){0,3})/],
  ["iPadOS", /\biPad\b.{0,64}?\bOS (\d{1,4}(?:_\d{1,4}){0,3})/],
  ["Android", /\bAndroid ?([\d.]{0,32})/],
  ["Chrome OS", /\bCrOS \S{1,32} ([\d.]{1,32})/],
  ["Windows", /\bWindows NT ([\d.]{1,32})/],
  ["macOS", /\bMac OS X ?(\d{1,4}(?:[_.]\d{1,4}){0,3})?/],
  ["Linux", /\bLinux\b()/],
];

const WINDOWS_VERSIONS: Readonly<Record<string, string>> = { "10.0": "10", "6.3": "8.1", "6.2": "8", "6.1": "7", "6.0": "Vista", "5.1": "XP" };

/** The patterns a parse may run over the text, for its charge to the request's budget. */
const PATTERNS = BROWSERS.length + OPERATING_SYSTEMS.length + 8;

export function parseUserAgent(header: string): UserAgent {
  const text = header.slice(0, MAX_USER_AGENT_CHARS);
  const agent: UserAgent = {
    name: "",
    version: "",
    os: "",
    os_version: "",
    device: "",
    is_mobile: false,
    is_tablet: false,
    is_desktop: false,
    is_bot: false,
    url: "",
  };
  if (text === "") return agent;
  agent.url = URL_IN_AGENT.exec(text)?.[1] ?? "";
  agent.is_bot = BOT.test(text);
  for (const [name, token] of BROWSERS) {
    const found = token.exec(text);
    if (found) {
      agent.name = name;
      agent.version = found[1] ?? found[2] ?? "";
      break;
    }
  }
  if (agent.is_bot) {
    const bot = BOT_NAME.exec(text) ?? PRODUCT.exec(text);
    if (bot) {
      agent.name = bot[1];
      agent.version = bot[2] ?? "";
    }
  } else if (agent.name === "") {
    const product = PRODUCT.exec(text);
    if (product) [, agent.name, agent.version] = product;
  }
  for (const [name, token] of OPERATING_SYSTEMS) {
    const found = token.exec(text);
    if (found) {
      agent.os = name;
      const version = (found[1] ?? "").replaceAll("_", ".");
      agent.os_version = name === "Windows" ? (WINDOWS_VERSIONS[version] ?? version) : version;
      break;
    }
  }
  agent.is_tablet = /\biPad\b|\bTablet\b/.test(text) || (agent.os === "Android" && !/\bMobile\b/.test(text));
  agent.is_mobile = !agent.is_tablet && /\bMobi|\biPhone\b|\biPod\b/.test(text);
  agent.is_desktop = !agent.is_bot && !agent.is_mobile && !agent.is_tablet && ["Windows", "macOS", "Linux", "Chrome OS"].includes(agent.os);
  agent.device = /\biPhone\b/.test(text)
    ? "iPhone"
    : /\biPad\b/.test(text)
      ? "iPad"
      : agent.is_tablet
        ? "Tablet"
        : agent.is_mobile
          ? "Mobile"
          : agent.is_desktop
            ? "Desktop"
            : "";
  return agent;
}

/** The User-Agent header as the request has it now (actions may change it), '' when absent. */
export function userAgentHeader(exchange: Exchange): string {
  return exchange.request.headers.get("user-agent") ?? "";
}

export const userAgentVariables: VariableFamily = {
  types: { "@req.user_agent": USER_AGENT_FIELDS },
  readers: {
    "@req.user_agent": (exchange) => {
      const header = userAgentHeader(exchange);
      // Each pattern reads the parsed text a bounded number of times: work of the request like any other.
      exchange.budget.chargeCel(Math.min(header.length, MAX_USER_AGENT_CHARS) * PATTERNS);
      return new Map(Object.entries(parseUserAgent(header)));
    },
  },
};
