/**
 * Shared by the Bash permission tests (issue 8 section 2): a temp workspace holding a secret, and
 * one run in which a scripted model sends each command as its own Bash call in one batch.
 */
import { existsSync } from "node:fs";
import { mkdir, realpath, writeFile } from "node:fs/promises";
import path from "node:path";
import { type AgentOptions, createAgent, type SDKResultMessage } from "skein";
import { scriptedModel } from "skein/testing";
import { vi } from "vitest";
import { resultFor, resultText } from "../support/results.ts";
import { useTempDirs } from "../support/temp.ts";
import { failureReason } from "./helpers.ts";

export const SECRET = "SECRET-VALUE-8213";

export function workspaces(): () => Promise<string> {
  const tempDir = useTempDirs("skein-perm-");
  return async () => {
    const ws = await realpath(await tempDir());
    await writeFile(path.join(ws, ".env"), `API_KEY=${SECRET}\n`);
    await mkdir(path.join(ws, "src"));
    await writeFile(path.join(ws, "src", "app.ts"), "export const KEY_NAME = 'app';\n");
    await mkdir(path.join(ws, ".git", "hooks"), { recursive: true });
    return ws;
  };
}

export interface BashRun {
  result: SDKResultMessage;
  /** The ids (`c0`, `c1`, ...) the approval handler was asked about. */
  asked: string[];
  reason(id: string): unknown;
  text(id: string): string;
  /** Every tool result's text, joined. */
  all: string;
}

/**
 * Sends `commands` as Bash calls `c0`, `c1`, ... in one batch. The approval handler answers
 * `approve` (default: no, so an ask never runs the command), recording what it was asked.
 */
export async function runBash(
  ws: string,
  permissions: AgentOptions["permissions"],
  commands: string[],
  approve = false,
): Promise<BashRun> {
  const asked: string[] = [];
  const approval = vi.fn(async (_name: string, _input: unknown, context: { callId: string }) => {
    asked.push(context.callId);
    return approve;
  });
  const model = scriptedModel([
    {
      toolCalls: commands.map((command, i) => ({
        id: `c${i}`,
        name: "Bash",
        input: { command, timeout: 60_000 },
      })),
    },
    { text: "done" },
  ]);
  const result = await createAgent({ model, cwd: ws, permissions, approval }).run("go");
  const text = (id: string) => resultText(resultFor(result.messages, id));
  return {
    result,
    asked,
    reason: (id) => failureReason(result, id),
    text,
    all: commands.map((_, i) => text(`c${i}`)).join("\n"),
  };
}

export function exists(ws: string, name: string): boolean {
  return existsSync(path.join(ws, name));
}

/** The labels of the commands a predicate fails for, to report them all at once. */
export function failing(
  commands: string[],
  ok: (id: string, command: string) => boolean,
): string[] {
  return commands.flatMap((command, i) => (ok(`c${i}`, command) ? [] : [`c${i}: ${command}`]));
}
