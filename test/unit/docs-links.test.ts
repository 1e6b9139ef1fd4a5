/**
 * Relative links in README.md and docs/: each names a file that exists and, with a #fragment, a heading of that
 * file (GitHub's anchor rules: lower case, punctuation dropped, spaces to '-', repeats numbered).
 */

import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

/** Links known to be broken, each with why: an entry that no longer matches a broken link fails too, so this only shrinks. */
const KNOWN_BROKEN = new Map<string, string>([]);

const MAX_DOC_FILES = 200;

function markdownFiles(): string[] {
  const files = ["README.md"];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (path.endsWith(".md")) files.push(path);
    }
  };
  walk("docs");
  if (files.length > MAX_DOC_FILES) throw new Error(`more than ${MAX_DOC_FILES} Markdown files under docs/`);
  return files;
}

/** Text outside code blocks and code spans, where a link is a link. */
function prose(text: string): string {
  return text.replace(/```[\s\S]*?```/g, "").replace(/`[^`\n]*`/g, "");
}

function anchorsOf(file: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const match of readFileSync(file, "utf8")
    .replace(/```[\s\S]*?```/g, "")
    .matchAll(/^#{1,6}\s+(.*)$/gm)) {
    const slug = (match[1] ?? "")
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, "")
      .replace(/\s/g, "-");
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return anchors;
}

function brokenLinks(): string[] {
  const broken: string[] = [];
  for (const file of markdownFiles()) {
    for (const match of prose(readFileSync(file, "utf8")).matchAll(/\]\(([^)\s]+)\)/g)) {
      const link = match[1] ?? "";
      if (/^[a-z][a-z0-9+.-]*:/i.test(link)) continue;
      const [path = "", fragment] = link.split("#");
      const target = path === "" ? resolve(file) : resolve(dirname(file), path);
      const name = `${file} -> ${link}`;
      if (!existsSync(target)) broken.push(`${name}: no file ${relative(".", target)}`);
      else if (fragment && target.endsWith(".md") && !anchorsOf(target).has(fragment)) broken.push(`${name}: no heading #${fragment}`);
    }
  }
  return broken;
}

describe("links between the docs", () => {
  const broken = brokenLinks();

  it("every relative link in README.md and docs/ names an existing file and heading", () => {
    expect(broken.filter((line) => !KNOWN_BROKEN.has(line.slice(0, line.lastIndexOf(": "))))).toEqual([]);
  });

  it("the README's docs index names every page of docs/", () => {
    const readme = readFileSync("README.md", "utf8");
    const pages = readdirSync("docs").filter((name) => name.endsWith(".md"));
    expect(pages.filter((page) => !readme.includes(`](docs/${page})`))).toEqual([]);
  });

  it("lists as known-broken only links that are still broken", () => {
    const stillBroken = new Set(broken.map((line) => line.slice(0, line.lastIndexOf(": "))));
    expect([...KNOWN_BROKEN.keys()].filter((name) => !stillBroken.has(name))).toEqual([]);
  });
});
