/**
 * README.md and docs/*.md read as the tests see them: their fenced code blocks, each with the file
 * the HTML comment just before it names; their links and headings; and a `fetch` that serves fixed
 * provider hosts from a local mock server, so examples that name real hosts run offline.
 */
import { readdirSync, readFileSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { format } from "node:util";
import { onTestFinished, vi } from "vitest";

export const ROOT = fileURLToPath(new URL("..", import.meta.url));

export function readRepoFile(relative: string): string {
  return readFileSync(path.join(ROOT, relative), "utf8");
}

export interface CodeBlock {
  lang: string;
  code: string;
  /** 1-based line of the opening fence. */
  line: number;
  /** The file named by a `<!-- examples/... -->` comment on the line before the fence. */
  file?: string;
}

const INCLUDE = /^<!-- (examples\/[\w./-]+\.ts) -->$/;

/** The user-facing pages: README.md and every docs/*.md, as paths from the repository's root. */
export function userPages(): string[] {
  const docs = readdirSync(path.join(ROOT, "docs"))
    .filter((name) => name.endsWith(".md"))
    .map((name) => `docs/${name}`);
  return ["README.md", ...docs.toSorted()];
}

/** Every fenced block of `markdown` (the page `name`), in order. An unclosed fence throws. */
export function codeBlocks(markdown: string, name = "README.md"): CodeBlock[] {
  const lines = markdown.split("\n");
  const blocks: CodeBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\S*)$/.exec(lines[i]!);
    if (!open) continue;
    const close = lines.indexOf("```", i + 1);
    if (close === -1) throw new Error(`${name}:${i + 1}: a code block is never closed`);
    const file = INCLUDE.exec(lines[i - 1] ?? "")?.[1];
    blocks.push({
      lang: open[1]!,
      code: `${lines.slice(i + 1, close).join("\n")}\n`,
      line: i + 1,
      ...(file ? { file } : {}),
    });
    i = close;
  }
  return blocks;
}

/**
 * The shell commands of a page's ```sh blocks that name something checkable: `npm run <script>`,
 * `npm test` and `npm start` must be package scripts, and the flags and subcommands of `npx skein`
 * must exist in the command's definition (`cliSource`: the sources' text). Returns what is wrong.
 */
export function commandProblems(
  blocks: CodeBlock[],
  scripts: Record<string, string>,
  cliSource: string,
): string[] {
  const problems: string[] = [];
  const commands = blocks
    .filter((block) => block.lang === "sh")
    .flatMap((block) => block.code.split("\n"))
    .flatMap((line) => line.replace(/\s+#.*$/, "").split("&&"))
    .map((command) => command.trim())
    .filter(Boolean);
  for (const command of commands) {
    const script = /^npm (?:run (\S+)|(test|start)\b)/.exec(command);
    const name = script?.[1] ?? script?.[2];
    if (name && !(name in scripts)) problems.push(`${command}: no npm script "${name}"`);
    if (!command.startsWith("npx skein")) continue;
    const words = command.split("|")[0]!.replace(/"[^"]*"/g, "");
    for (const [flag] of words.matchAll(/(?<= )--?[a-z][\w-]*/g))
      if (!new RegExp(`"(-\\w, )?${flag}[ "]`).test(cliSource))
        problems.push(`${command}: the command has no option ${flag}`);
    const subcommand = /^npx skein (\w+)(?: |$)/.exec(words)?.[1];
    if (
      subcommand &&
      /^[a-z]+$/.test(subcommand) &&
      !cliSource.includes(`.command("${subcommand}")`)
    )
      problems.push(`${command}: the command has no subcommand ${subcommand}`);
  }
  return problems;
}

/** The text of every source file under `dir` (relative to the root), concatenated. */
export function sourceText(dir: string): string {
  return readdirSync(path.join(ROOT, dir), { recursive: true, encoding: "utf8" })
    .filter((file) => file.endsWith(".ts"))
    .map((file) => readRepoFile(`${dir}/${file}`))
    .join("\n");
}

/** Collects what `console.log` prints while `run` runs (an example module's import, say). */
export async function logged(run: () => Promise<unknown>): Promise<string[]> {
  const lines: string[] = [];
  const spy = vi.spyOn(console, "log").mockImplementation((...args: unknown[]) => {
    lines.push(format(...args));
  });
  try {
    await run();
  } finally {
    spy.mockRestore();
  }
  return lines;
}

/**
 * Replaces `fetch` with one that sends each request whose URL starts with a key of `routes` to
 * that key's local URL instead, and refuses any other host than 127.0.0.1. Returns the URLs the
 * code asked for, in order, as it asked for them.
 */
export function routeFetch(routes: Record<string, string>): string[] {
  const asked: string[] = [];
  const realFetch = globalThis.fetch;
  vi.stubGlobal("fetch", (input: string | URL | Request, init?: RequestInit) => {
    const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
    asked.push(url);
    const prefix = Object.keys(routes).find((key) => url.startsWith(key));
    if (prefix) return realFetch(routes[prefix] + url.slice(prefix.length), init);
    if (new URL(url).hostname === "127.0.0.1") return realFetch(input, init);
    return Promise.reject(new Error(`no network in tests: ${url}`));
  });
  return asked;
}

/** A fresh directory holding `files`, made the working directory (the test puts the old one back). */
export async function workspace(files: Record<string, string | Buffer>): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), "skein-readme-"));
  onTestFinished(() => rm(dir, { recursive: true, force: true }));
  for (const [name, content] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(dir, name)), { recursive: true });
    await writeFile(path.join(dir, name), content);
  }
  process.chdir(dir);
  return dir;
}

/** The text of each tool_result block in a request's last message (Anthropic's shape), in order. */
export function toolResultTexts(body: any): string[] {
  const last = body.messages.at(-1);
  return (Array.isArray(last.content) ? last.content : [])
    .filter((block: any) => block.type === "tool_result")
    .map((block: any) =>
      typeof block.content === "string" ? block.content : JSON.stringify(block.content),
    );
}
