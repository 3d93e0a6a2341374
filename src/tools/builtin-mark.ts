// What marks a tool as built in, and how the permission gate reads a built-in's calls: the
// built-ins (src/builtin) set the mark, the rules (src/permissions) read it.

import type { ToolDefinition } from "./types.ts";

/**
 * How the permission gate reads a built-in call: which rule family governs it and what its
 * rule patterns match against. `Read(...)` rules govern "read" tools, `Edit(...)` rules "edit"
 * tools, `Bash(...)` rules "bash" tools (DESIGN "Permissions and built-ins").
 */
export type BuiltinPermission<TInput> =
  | { kind: "read"; paths(input: TInput): string[] }
  | { kind: "edit"; paths(input: TInput): string[] }
  | { kind: "bash"; command(input: TInput): string }
  /** Tools with nothing to guard beyond their name (BashOutput, KillShell). */
  | { kind: "none" };

/** What marks a tool as built in: the preset and the name checks read it. */
export interface BuiltinInfo {
  permission: BuiltinPermission<any>;
}

/** Built-ins by identity: a private registry, so no app tool can pass itself off as built in. */
const builtins = new WeakMap<ToolDefinition, BuiltinInfo>();

/** Marks `tool` as built in (builtin/define.ts does, for each built-in it makes). */
export function markBuiltin(tool: ToolDefinition, info: BuiltinInfo): void {
  builtins.set(tool, info);
}

/** The built-in description of a tool, or undefined for custom tools. */
export function builtinInfo(tool: ToolDefinition): BuiltinInfo | undefined {
  return builtins.get(tool);
}
