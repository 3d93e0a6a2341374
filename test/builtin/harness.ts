import { randomBytes } from "node:crypto";
import * as fs from "node:fs";
import path from "node:path";
import { vi } from "vitest";
import { editTool } from "../../src/builtin/edit.ts";
import type { BuiltinEnvironment } from "../../src/builtin/environment.ts";
import { globTool } from "../../src/builtin/glob.ts";
import { grepTool } from "../../src/builtin/grep.ts";
import { lsTool } from "../../src/builtin/ls.ts";
import { readTool } from "../../src/builtin/read.ts";
import { createWorkspace } from "../../src/builtin/workspace.ts";
import { writeTool } from "../../src/builtin/write.ts";
import type { ToolResultContentBlock } from "../../src/core/messages.ts";
import { runtimeOf } from "../../src/tools/definition.ts";
import type {
  BackgroundTasks,
  ToolContext,
  ToolDefinition,
  ToolResult,
} from "../../src/tools/types.ts";
import { makeTempDir, removeDir } from "../support/temp.ts";

export type Snapshot = { path: string; content: string | null };

/** A ToolContext with a Map-backed runData that keeps JSON values only, as a paused state would. */
export interface FakeContext extends ToolContext {
  data: Map<string, unknown>;
  snapshots: Snapshot[];
  recordSnapshot: ReturnType<typeof vi.fn<(snapshot: Snapshot) => Promise<void>>>;
  controller: AbortController;
}

export function fakeContext(data = new Map<string, unknown>()): FakeContext {
  const controller = new AbortController();
  const snapshots: Snapshot[] = [];
  return {
    callId: "call-1",
    call: { id: "call-1", name: "test", input: {}, kind: "tool" },
    sessionId: "session-1",
    signal: controller.signal,
    controller,
    emit: () => {},
    update: () => {},
    data,
    snapshots,
    recordSnapshot: vi.fn(async (snapshot: Snapshot) => {
      snapshots.push(snapshot);
    }),
    runData: {
      get: (key) => data.get(key),
      set: (key, value) => {
        if (value === undefined) data.delete(key);
        else data.set(key, JSON.parse(JSON.stringify(value)));
      },
    },
  };
}

const noBackground: BackgroundTasks = {
  start: () => {
    throw new Error("no background tasks in these tests");
  },
  get: () => undefined,
  stop: () => false,
};

export type Recheck = BuiltinEnvironment["recheck"];

export interface EnvOptions {
  /** Paths a Read deny or ask rule covers (default: none). */
  hiddenFromSearch?: (relative: string) => boolean;
  /** The gate's second look at the opened path (default: always fine). */
  recheck?: Recheck;
}

export function makeEnv(root: string, options: EnvOptions = {}): BuiltinEnvironment {
  return {
    workspace: createWorkspace(root),
    hiddenFromSearch: options.hiddenFromSearch ?? (() => false),
    recheck: options.recheck ?? (() => undefined),
    readDenyPatterns: [],
    background: noBackground,
    sandboxed: false,
  };
}

export function toolsOf(env: BuiltinEnvironment) {
  return {
    Read: readTool(env),
    LS: lsTool(env),
    Glob: globTool(env),
    Grep: grepTool(env),
    Write: writeTool(env),
    Edit: editTool(env),
  };
}

export interface Invocation extends ToolResult {
  /** The result's text (text blocks joined), for assertions. */
  text: string;
}

/** Runs a tool as the engine does: validate, execute, toResult. */
export async function invoke(
  tool: ToolDefinition,
  input: unknown,
  ctx: ToolContext = fakeContext(),
): Promise<Invocation> {
  const runtime = runtimeOf(tool);
  const outcome = await runtime.validate(input);
  if (!outcome.ok) {
    const text = `invalid input: ${outcome.issues.map((issue) => issue.message).join("; ")}`;
    return { content: text, isError: true, text };
  }
  const result = await runtime.toResult(await runtime.execute!(outcome.value, ctx));
  return { ...result, text: textOf(result.content) };
}

function textOf(content: string | ToolResultContentBlock[]): string {
  if (typeof content === "string") return content;
  return content
    .map((block) => (block.type === "text" ? block.text : `[${block.type}]`))
    .join("\n");
}

/**
 * A temp directory holding the workspace `work` and, around it, what must never be touched or
 * shown: a sibling with a shared prefix (`work2`), `work-evil`, and a file beside them. Each
 * holds a secret; `assertOutsideUntouched` checks nothing outside changed or appeared.
 */
export interface Fixture {
  base: string;
  root: string;
  sibling: string;
  evil: string;
  secrets: string[];
  env: BuiltinEnvironment;
  /** `env.recheck`, configurable per test (`fx.recheck.mockImplementation(...)`); fine by default. */
  recheck: ReturnType<typeof vi.fn<Recheck>>;
  tools: ReturnType<typeof toolsOf>;
  ctx: FakeContext;
  /** Writes a file inside the workspace (parents created). */
  write(relative: string, content: string | Buffer): string;
  outsideState(): Map<string, string>;
  cleanup(): void;
}

export function makeFixture(hiddenFromSearch?: (relative: string) => boolean): Fixture {
  const base = makeTempDir("skein-ws-");
  const root = path.join(base, "work");
  const sibling = path.join(base, "work2");
  const evil = path.join(base, "work-evil");
  for (const dir of [root, sibling, evil]) fs.mkdirSync(dir);
  const secret = (name: string) => `SECRET-${name}-${randomBytes(8).toString("hex")}`;
  const secrets = [secret("sibling"), secret("evil"), secret("beside")];
  fs.writeFileSync(path.join(sibling, "x"), `${secrets[0]}\n`);
  fs.writeFileSync(path.join(evil, "id_rsa"), `${secrets[1]}\n`);
  fs.writeFileSync(path.join(base, "outside.txt"), `${secrets[2]}\n`);
  const recheck = vi.fn<Recheck>(() => undefined);
  const env = makeEnv(root, { ...(hiddenFromSearch ? { hiddenFromSearch } : {}), recheck });
  return {
    base,
    root,
    sibling,
    evil,
    secrets,
    env,
    recheck,
    tools: toolsOf(env),
    ctx: fakeContext(),
    write(relative, content) {
      const file = path.join(root, relative);
      fs.mkdirSync(path.dirname(file), { recursive: true });
      fs.writeFileSync(file, content);
      return file;
    },
    outsideState: () => listOutside(base, root),
    cleanup: () => removeDir(base),
  };
}

/** Every entry under `base` but outside `root`, with its content (or link target). */
function listOutside(base: string, root: string): Map<string, string> {
  const state = new Map<string, string>();
  const walk = (dir: string) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (full === root) continue;
      if (entry.isDirectory()) {
        state.set(full, "dir");
        walk(full);
      } else if (entry.isSymbolicLink()) state.set(full, `link:${fs.readlinkSync(full)}`);
      else state.set(full, fs.readFileSync(full, "utf8"));
    }
  };
  walk(base);
  return state;
}

/** Throws when a secret from outside the workspace appears in the text. */
export function expectNoSecret(fixture: Fixture, text: string): void {
  for (const secret of fixture.secrets)
    if (text.includes(secret)) throw new Error(`secret leaked: ${text}`);
}

/** Throws when the text names the host directory (for inputs that did not name it themselves). */
export function expectNoHostPath(fixture: Fixture, text: string): void {
  if (text.includes(fixture.base)) throw new Error(`host path leaked: ${text}`);
}
