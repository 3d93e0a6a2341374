import { mkdirSync } from "node:fs";
import { join, relative, resolve as resolvePath } from "node:path";
import { createBackgroundTasks } from "../../src/builtin/background.ts";
import type { BuiltinEnvironment } from "../../src/builtin/environment.ts";
import { runtimeOf } from "../../src/tools/definition.ts";
import type { ToolContext, ToolDefinition, ToolResult } from "../../src/tools/types.ts";
import { makeTempDir, removeDir } from "../support/temp.ts";

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
  const root = makeTempDir("skein-bash-");
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
      removeDir(root);
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
