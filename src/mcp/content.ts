// MCP tool results to skein's and back (design/mcp.md "Results"): content keeps its order, and
// nothing is dropped without a note saying what it was.

import type { ToolResultContentBlock } from "../core/messages.ts";
import { formatBytes, MAX_IMAGE_BYTES } from "../tools/images.ts";
import type { ToolResult } from "../tools/types.ts";

/** A content item of an MCP `tools/call` result, read loosely (servers send what they send). */
type McpContent = { type?: unknown; [key: string]: unknown };

/** What a skein tool returns for a `tools/call` result. */
export function toolResultFromMcp(result: {
  content?: unknown;
  isError?: unknown;
  structuredContent?: unknown;
}): ToolResult {
  const items = Array.isArray(result.content) ? (result.content as McpContent[]) : [];
  const blocks = items.map(blockFromMcp);
  const structured = result.structuredContent;
  const mapped: ToolResult = {
    // A structured-only answer: the model reads its JSON, as the server meant it to be read.
    content: blocks.length === 0 && structured !== undefined ? jsonText(structured) : blocks,
  };
  if (result.isError === true) mapped.isError = true;
  if (structured !== undefined) mapped.details = { structuredContent: structured };
  return mapped;
}

function blockFromMcp(item: McpContent): ToolResultContentBlock {
  const text = (value: string): ToolResultContentBlock => ({ type: "text", text: value });
  switch (item.type) {
    case "text":
      return text(typeof item.text === "string" ? item.text : jsonText(item.text));
    case "image":
      if (typeof item.data === "string" && typeof item.mimeType === "string") {
        // The limit Read keeps to: an image past it would cost the whole request, not only itself.
        const bytes = base64Bytes(item.data);
        if (bytes > MAX_IMAGE_BYTES)
          return text(
            `[image (${item.mimeType}, ${bytes} bytes) returned by the tool: not shown, images are sent to the model up to ${formatBytes(MAX_IMAGE_BYTES)} (${MAX_IMAGE_BYTES} bytes)]`,
          );
        return {
          type: "image",
          source: { type: "base64", media_type: item.mimeType, data: item.data },
        };
      }
      return text(`[image without data or mimeType from the MCP server: ${preview(item)}]`);
    case "audio":
      return text(
        `[audio (${String(item.mimeType ?? "unknown type")}, ${base64Bytes(item.data)} bytes) returned by the tool: not shown, audio cannot be sent to the model]`,
      );
    case "resource": {
      const resource = (item.resource ?? {}) as Record<string, unknown>;
      if (typeof resource.text === "string") return text(resource.text);
      return text(
        `[resource ${String(resource.uri ?? "(no uri)")} (${String(resource.mimeType ?? "unknown type")}, ${base64Bytes(resource.blob)} bytes of binary content): not shown]`,
      );
    }
    case "resource_link":
      return text(
        `Resource link: ${String(item.name ?? item.title ?? "(unnamed)")} <${String(item.uri)}>${typeof item.mimeType === "string" ? ` (${item.mimeType})` : ""}`,
      );
    default:
      return text(
        `[content of type ${JSON.stringify(item.type)} from the MCP server, not shown: ${preview(item)}]`,
      );
  }
}

function base64Bytes(data: unknown): number {
  if (typeof data !== "string") return 0;
  const padding = data.endsWith("==") ? 2 : data.endsWith("=") ? 1 : 0;
  return Math.max(0, Math.floor((data.length * 3) / 4) - padding);
}

function jsonText(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

function preview(value: unknown): string {
  const text = jsonText(value);
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}

/** An MCP content item, as `serveMcp()` sends a skein result. */
export type McpContentOut =
  | { type: "text"; text: string }
  | { type: "image"; data: string; mimeType: string };

/** A skein result as MCP content: text and base64 images as they are, an image URL as a text line. */
export function mcpContentFromResult(result: ToolResult): McpContentOut[] {
  if (typeof result.content === "string") return [{ type: "text", text: result.content }];
  return result.content.map((block): McpContentOut => {
    if (block.type === "text") return { type: "text", text: block.text };
    if (block.source.type === "base64")
      return { type: "image", data: block.source.data, mimeType: block.source.media_type };
    return { type: "text", text: `Image: ${block.source.url}` };
  });
}
