// What a run's results and errors look like on the page: shared by the UI stream and AG-UI.

import type { SDKResultMessage } from "../run/types.ts";
import type { ToolResult } from "../tools/types.ts";

/** The text a tool result carries for the page: its text, or its content blocks when it has images. */
export function toolOutput(result: ToolResult): unknown {
  const { content } = result;
  if (typeof content === "string") return content;
  if (content.every((block) => block.type === "text"))
    return content.map((block) => (block.type === "text" ? block.text : "")).join("");
  return content;
}

export function errorTextOf(result: ToolResult): string {
  const output = toolOutput(result);
  return typeof output === "string" ? output : JSON.stringify(output);
}

export function finishReason(result: SDKResultMessage): "stop" | "length" | "error" | "tool-calls" {
  switch (result.subtype) {
    case "success":
      return "stop";
    case "error_max_turns":
      return "length";
    case "paused":
      return "tool-calls";
    default:
      return "error";
  }
}

export function textOf(content: string | readonly { type: string; text?: string }[]): string {
  if (typeof content === "string") return content;
  return content.map((block) => (block.type === "text" ? (block.text ?? "") : "")).join("");
}

export function errorInfo(error: unknown): { name: string; message: string } {
  if (error instanceof Error) return { name: error.name, message: error.message };
  return { name: "Error", message: String(error) };
}
