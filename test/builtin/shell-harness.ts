import { mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative, resolve as resolvePath } from "node:path";
import { createBackgroundTasks } from "../../src/builtin/background.ts";
import type { BuiltinEnvironment } from "../../src/builtin/environment.ts";
import { runtimeOf } from "../../src/tools/definition.ts";
import type { ToolContext, ToolDefinition, ToolResult } from "../../src/tools/types.ts";

export interface ShellFixture {
  root: string;
  env: BuiltinEnvironment;
  background: ReturnType<typeof createBackgroundTasks>;
  cleanup(): void;
}

/** A real temp workspace and the environment a shell tool gets. */
export function shellFixture(
  options: { sandboxed?: boolean; readDenyPatterns?: string[] } = {},
): ShellFixture {
  const root = realpathSync(mkdtempSync(join(tmpdir(), "skein-bash-")));
  mkdirSync(join(root, "sub"));
  const background = createBackgroundTasks();
  const env: BuiltinEnvironment = {
    workspace: {
      root,
      // Trivial: these tests exercise Bash, not path confinement.
      resolve: async (path) => {
        const absolute = resolvePath(root, path);
        return { absolute, relative: relative(root, absolute) };
      },
    },
    hiddenFromSearch: () => false,
    recheck: () => undefined,
    readDenyPatterns: options.readDenyPatterns ?? [],
    background,
    sandboxed: options.sandboxed ?? false,
  };
  return {
    root,
    env,
    background,
    cleanup() {
      background.stopAll();
      rmSync(root, { recursive: true, force: true });
    },
  };
}

/** Validates and executes one call the way the engine does, with a fake ToolContext. */
export async function invoke(
  tool: ToolDefinition,
  input: unknown,
  options: { signal?: AbortSignal; context?: Partial<ToolContext> } = {},
): Promise<ToolResult & { text: string }> {
  const runtime = runtimeOf(tool);
  const validated = await runtime.validate(input);
  if (!validated.ok) throw new Error(`invalid input: ${JSON.stringify(validated.issues)}`);
  const store = new Map<string, unknown>();
  const context: ToolContext = {
    callId: "call_1",
    call: { id: "call_1", name: tool.name, input, kind: "tool" },
    sessionId: "session_1",
    signal: options.signal ?? new AbortController().signal,
    emit() {},
    update() {},
    runData: {
      get: (key) => store.get(key),
      set: (key, value) => (value === undefined ? store.delete(key) : store.set(key, value)),
    },
    ...options.context,
  };
  const result = await runtime.toResult(await runtime.execute!(validated.value, context));
  const text = typeof result.content === "string" ? result.content : JSON.stringify(result.content);
  return { ...result, text };
}

/** True while a process with this pid exists (zombies count: they may await a slow reaper). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Waits until every pid is gone; orphans are reaped by pid 1, which may take a moment. */
export async function expectGone(pids: number[], withinMs = 8_000): Promise<void> {
  // A pid that was never read must not pass as "gone".
  if (pids.length === 0 || !pids.every((pid) => Number.isInteger(pid) && pid > 0)) {
    throw new Error(`not a list of pids: ${JSON.stringify(pids)}`);
  }
  const deadline = Date.now() + withinMs;
  while (pids.some(alive)) {
    if (Date.now() > deadline) {
      throw new Error(`still alive after ${withinMs} ms: ${pids.filter(alive).join(", ")}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Host pids whose command line contains `needle` (sandboxed pids differ from host pids). */
export function pidsWithCmdline(needle: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, "utf8").replaceAll("\0", " ");
      const state = readFileSync(`/proc/${entry}/stat`, "utf8").split(") ")[1]?.[0];
      if (cmdline.includes(needle) && state !== "Z") pids.push(Number(entry));
    } catch {}
  }
  return pids;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Polls until `check` returns a value other than undefined (or throws after `withinMs`). */
export async function waitFor<T>(
  check: () => T | undefined | Promise<T | undefined>,
  withinMs = 8_000,
): Promise<T> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`condition not met within ${withinMs} ms`);
    await sleep(25);
  }
}
