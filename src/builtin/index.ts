import type { ToolDefinition } from "../tools/types.ts";
import { bashOutputTool, bashTool, killShellTool } from "./bash.ts";
import { editTool } from "./edit.ts";
import type { BuiltinEnvironment } from "./environment.ts";
import { globTool } from "./glob.ts";
import { grepTool } from "./grep.ts";
import { lsTool } from "./ls.ts";
import { readTool } from "./read.ts";
import { writeTool } from "./write.ts";

/** The names of skein's built-in tools, in the order the model sees them. */
export const BUILTIN_TOOL_NAMES = [
  "Read",
  "LS",
  "Glob",
  "Grep",
  "Write",
  "Edit",
  "Bash",
  "BashOutput",
  "KillShell",
] as const;

/** One agent's built-in tools, sharing its workspace, rules and background tasks. */
export function builtinTools(env: BuiltinEnvironment): ToolDefinition[] {
  return [
    readTool(env),
    lsTool(env),
    globTool(env),
    grepTool(env),
    writeTool(env),
    editTool(env),
    bashTool(env),
    bashOutputTool(env),
    killShellTool(env),
  ];
}
