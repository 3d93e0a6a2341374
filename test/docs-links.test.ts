/**
 * Every relative link in README.md, ARCHITECTURE.md and docs/*.md resolves: the file or directory
 * it names exists, and its #anchor is a heading of the page it points to (GitHub's anchors). Links
 * into docs/api/, the API reference `npm run docs` builds, need that directory git-ignored instead.
 */
import { existsSync, statSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT, readRepoFile, userPages } from "./readme-blocks.ts";

const PAGES = [...userPages(), "ARCHITECTURE.md"];
/** Generated, git-ignored output the pages may link to before it is built. */
const GENERATED = ["docs/api/"];

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, "")
    .replace(/ /g, "-");
}

/** A page's anchors, in order; repeated headings get -1, -2, ... as on GitHub. */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const result = new Set<string>();
  for (const line of withoutFences(markdown).split("\n")) {
    const heading = /^#{1,6} (.+)$/.exec(line)?.[1];
    if (heading === undefined) continue;
    const base = slug(heading);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    result.add(count === 0 ? base : `${base}-${count}`);
  }
  return result;
}

/** The markdown without its fenced blocks (a `#` line there is not a heading). */
function withoutFences(markdown: string): string {
  return markdown.replace(/^```[^\n]*\n[\s\S]*?^```$/gm, "");
}

/** The markdown without fenced blocks and inline code spans (their brackets are not links). */
function withoutCode(markdown: string): string {
  return withoutFences(markdown).replace(/`[^`\n]*`/g, "");
}

/** Every link target in `markdown` that is not a URL with a scheme. */
function relativeLinks(markdown: string): string[] {
  return [...withoutCode(markdown).matchAll(/\]\(([^)\s]+)\)/g)]
    .map((match) => match[1]!)
    .filter((target) => !/^[a-z][a-z+.-]*:/i.test(target));
}

/** What is wrong with the links of `page` (relative to the root), as messages. */
function brokenLinks(page: string, markdown: string, read = readRepoFile): string[] {
  const problems: string[] = [];
  for (const target of relativeLinks(markdown)) {
    const [file, anchor] = target.split("#") as [string, string | undefined];
    const resolved = file
      ? path.posix.normalize(path.posix.join(path.posix.dirname(page), file))
      : page;
    if (resolved.startsWith("..")) {
      problems.push(`${page}: ${target} leads out of the repository`);
      continue;
    }
    if (GENERATED.some((dir) => resolved.startsWith(dir))) continue;
    if (file && !existsSync(path.join(ROOT, resolved))) {
      problems.push(`${page}: ${target}: no file ${resolved}`);
      continue;
    }
    if (anchor === undefined) continue;
    if (file && (!resolved.endsWith(".md") || statSync(path.join(ROOT, resolved)).isDirectory())) {
      problems.push(`${page}: ${target}: an anchor into a file that is not a page`);
      continue;
    }
    const text = resolved === page ? markdown : read(resolved);
    if (!anchors(text).has(anchor))
      problems.push(`${page}: ${target}: no heading #${anchor} in ${resolved}`);
  }
  return problems;
}

describe("links", () => {
  it.each(PAGES)("every relative link in %s resolves", (page) => {
    const markdown = readRepoFile(page);
    expect(brokenLinks(page, markdown)).toEqual([]);
  });

  it("the pages link to one another, and the README to every guide", () => {
    const links = relativeLinks(readRepoFile("README.md"));
    expect(links.filter((link) => link.startsWith("docs/")).length).toBeGreaterThanOrEqual(14);
  });

  it("generated output the pages link to is git-ignored", () => {
    const ignored = readRepoFile(".gitignore").split("\n");
    for (const dir of GENERATED) expect(ignored).toContain(dir);
  });

  it("anchors follow GitHub's rules", () => {
    expect(slug("Running on many machines (`skein/pgboss`)")).toBe(
      "running-on-many-machines-skeinpgboss",
    );
    expect(slug("The `skein` command")).toBe("the-skein-command");
    expect(slug("`ToolContext.runData`")).toBe("toolcontextrundata");
    expect(slug('"does not match its seal"')).toBe("does-not-match-its-seal");
    expect(slug("Model settings and `fetch`")).toBe("model-settings-and-fetch");
    expect([...anchors("# A\n## Details\n```\n# not a heading\n```\n## Details\n")]).toEqual([
      "a",
      "details",
      "details-1",
    ]);
  });

  it("a missing file, a missing heading and a link out of the repository are each caught", () => {
    const page = "docs/x.md";
    const markdown = [
      "[ok](../README.md) [ok](#here) [ok](tools.md#tool) [web](https://example.com/a#b)",
      "`[not a link](nowhere.md)`",
      "[gone](nowhere.md) [bad anchor](tools.md#no-such-heading) [here too](#nowhere)",
      "[out](../../etc/passwd)",
      "# Here",
    ].join("\n");
    expect(brokenLinks(page, markdown)).toEqual([
      "docs/x.md: nowhere.md: no file docs/nowhere.md",
      "docs/x.md: tools.md#no-such-heading: no heading #no-such-heading in docs/tools.md",
      "docs/x.md: #nowhere: no heading #nowhere in docs/x.md",
      "docs/x.md: ../../etc/passwd leads out of the repository",
    ]);
  });
});
