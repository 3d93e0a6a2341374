// The `--allow` rule the paused-run message suggests: one for the tool call that actually waited.

import type { PendingToolCall } from "../index.ts";

/** Built-ins whose rule pattern is the path the call names, and the input field that holds it. */
const PATH_FIELD: Record<string, string> = {
  Read: "file_path",
  Write: "file_path",
  Edit: "file_path",
  LS: "path",
  Glob: "path",
  Grep: "path",
};

/** Longest command or path shown inside a suggested rule; longer ones get a prefix rule. */
const MAX_PATTERN = 60;

/**
 * A rule that would let this call run without asking, written as a shell argument:
 * `Write(hello.txt)` for a file tool, `Bash(npm test)` for a short plain command (its first word
 * and `:*` for a long one), the bare name for any other tool.
 */
export function suggestedAllowRule(call: Pick<PendingToolCall, "name" | "input">): string {
  const input = (call.input ?? {}) as Record<string, unknown>;
  const field = PATH_FIELD[call.name];
  const value = field !== undefined ? input[field] : undefined;
  if (typeof value === "string" && value !== "" && value.length <= MAX_PATTERN)
    return shellQuote(`${call.name}(${escapePathPattern(value)})`);
  if (call.name === "Bash" && typeof input.command === "string") {
    const command = input.command.trim();
    const first = command.split(/\s+/)[0] ?? "";
    if (/^[\w ./:=@+-]+$/.test(command) && command.length <= MAX_PATTERN)
      return shellQuote(`Bash(${command})`);
    if (/^[\w./@+-]+$/.test(first)) return shellQuote(`Bash(${first}:*)`);
  }
  return shellQuote(call.name);
}

/** A path as a rule pattern that names it literally: gitignore's special characters escaped. */
function escapePathPattern(path: string): string {
  return path.replace(/[*?[\]!#\\]/g, "\\$&");
}

/** Double quotes when the shell leaves the text alone inside them, single quotes otherwise. */
function shellQuote(text: string): string {
  if (!/["$`\\!]/.test(text)) return `"${text}"`;
  return `'${text.replace(/'/g, `'\\''`)}'`;
}
