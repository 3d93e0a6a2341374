import type { ToolResult, Usage } from "../index.ts";

/**
 * The whole text, never cut (what is approved must be seen in full: a harmless head can hide a
 * dangerous tail), with control and format characters and the Unicode line separators escaped,
 * so text from a model, a tool, a config file or a session log cannot move the cursor, retitle
 * the terminal or redraw a question. A non-string is shown as JSON, which the escapes keep valid
 * (JSON.stringify leaves C1 controls and format characters raw, only ever inside its strings).
 */
export function printable(value: unknown): string {
  const text = typeof value === "string" ? value : (JSON.stringify(value) ?? String(value));
  return text.replace(
    /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu,
    (char) => `\\u${char.codePointAt(0)!.toString(16).padStart(4, "0")}`,
  );
}

/** Whitespace and line breaks folded into single spaces. */
export function oneLine(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}

/** At most `width` characters, with an ellipsis when cut. */
export function truncate(text: string, width: number): string {
  return text.length > width ? `${text.slice(0, Math.max(0, width - 1))}…` : text;
}

/**
 * A value on one short line, escaped (`printable`): strings as they are, anything else as compact
 * JSON. What tools and models say is shown this way, never as raw control sequences.
 */
export function compact(value: unknown, width: number): string {
  let text: string;
  if (typeof value === "string") text = value;
  else {
    try {
      text = JSON.stringify(value) ?? String(value);
    } catch {
      text = String(value);
    }
  }
  return printable(truncate(oneLine(text), width));
}

/** The text of a tool result, images shown as `[image]`. */
export function resultText(result: ToolResult): string {
  if (typeof result.content === "string") return result.content;
  return result.content
    .map((block) => (block.type === "text" ? block.text : `[${block.type}]`))
    .join(" ");
}

export function formatDuration(milliseconds: number): string {
  if (milliseconds < 1000) return `${Math.round(milliseconds)} ms`;
  return `${(milliseconds / 1000).toFixed(1)} s`;
}

const numbers = new Intl.NumberFormat("en-US");

/** What the usage line says: model calls, tokens, and the time the agent worked. */
export interface RunTotals {
  numTurns: number;
  usage: Usage;
  durationMs: number;
}

/**
 * `usage: 1,815 input, 225 output tokens; 1,067 cache reads, 0 cache writes · $0.0061 · 3 turns · 2.1 s`
 * (the cost only when every model call was priced).
 */
export function formatUsage(totals: RunTotals): string {
  const { usage } = totals;
  const turns = `${totals.numTurns} turn${totals.numTurns === 1 ? "" : "s"}`;
  const cost = usage.costUsd === undefined ? "" : ` · ${formatCost(usage.costUsd)}`;
  return (
    `usage: ${numbers.format(usage.inputTokens)} input, ${numbers.format(usage.outputTokens)} output tokens; ` +
    `${numbers.format(usage.cacheReadInputTokens)} cache reads, ${numbers.format(usage.cacheCreationInputTokens)} cache writes` +
    `${cost} · ${turns} · ${formatDuration(totals.durationMs)}`
  );
}

/** Dollars: cents for a dollar or more, four decimals below (a turn often costs a fraction of a cent). */
export function formatCost(usd: number): string {
  return usd >= 1 ? `$${usd.toFixed(2)}` : `$${usd.toFixed(4)}`;
}
