/**
 * README.md read as the test sees it: its fenced code blocks, each with the file the HTML
 * comment just before it names, and a `fetch` that serves fixed provider hosts from a local
 * mock server, so README examples that name real hosts run offline.
 */
import { readFileSync } from "node:fs";
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

/** Every fenced block of `markdown`, in order. An unclosed fence throws. */
export function codeBlocks(markdown: string): CodeBlock[] {
  const lines = markdown.split("\n");
  const blocks: CodeBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\S*)$/.exec(lines[i]!);
    if (!open) continue;
    const close = lines.indexOf("```", i + 1);
    if (close === -1) throw new Error(`README.md:${i + 1}: a code block is never closed`);
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
