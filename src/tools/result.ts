import type { ToolResultContentBlock } from "../core/messages.ts";
import type { ToolResult } from "./types.ts";

/** A tool returned a value skein cannot send to the model. Becomes an error result, never a crash. */
export class InvalidToolResultError extends Error {
  override name = "InvalidToolResultError";
}

const RESULT_KEYS = new Set([
  "content",
  "isError",
  "details",
  "endTurn",
  "terminate",
  "structuredResult",
]);

/**
 * Normalises what a `tool()` handler returned: a string, content blocks, or a `ToolResult`.
 * Throws `InvalidToolResultError` with what was expected for anything else.
 */
export function toolResultFromReturn(value: unknown): ToolResult {
  if (typeof value === "string") return { content: value };
  if (Array.isArray(value)) return { content: checkBlocks(value) };
  if (typeof value === "object" && value !== null && "content" in value) {
    const result = value as ToolResult;
    const content =
      typeof result.content === "string"
        ? result.content
        : Array.isArray(result.content)
          ? checkBlocks(result.content)
          : fail(
              `its "content" is ${kindOf(result.content)}; expected a string or an array of content blocks.`,
            );
    const normalised: ToolResult = { content };
    for (const key of Object.keys(result)) {
      if (key !== "content" && RESULT_KEYS.has(key))
        (normalised as unknown as Record<string, unknown>)[key] = (
          result as unknown as Record<string, unknown>
        )[key];
    }
    return normalised;
  }
  return fail(
    `it returned ${kindOf(value)}; expected a string, an array of content blocks, or an object with "content" (a ToolResult).`,
  );
}

/** Normalises what a `defineTool()` `execute` returned: a string as is, anything else as JSON text. */
export function toolResultFromData(value: unknown): ToolResult {
  if (typeof value === "string") return { content: value };
  if (value === undefined) return { content: "" };
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (error) {
    fail(
      `its result could not be serialised to JSON (${error instanceof Error ? error.message : String(error)}).`,
    );
  }
  if (text === undefined) fail(`it returned ${kindOf(value)}, which has no JSON form.`);
  return { content: text as string };
}

/**
 * Checks each block and copies it to its plain shape (`{ type, text }` or `{ type, source }`), so
 * nothing the tool keeps a reference to, or hangs on a block, reaches the transcript.
 */
function checkBlocks(blocks: unknown[]): ToolResultContentBlock[] {
  return blocks.map((block, index): ToolResultContentBlock => {
    const type =
      typeof block === "object" && block !== null ? (block as { type?: unknown }).type : undefined;
    if (type === "text") {
      const text = (block as { text?: unknown }).text;
      if (typeof text !== "string")
        fail(`content block ${index} is "text" without a string "text".`);
      return { type: "text", text };
    }
    if (type === "image")
      return { type: "image", source: imageSource((block as { source?: unknown }).source, index) };
    return fail(
      `content block ${index} is ${kindOf(block)}; tool results may hold "text" and "image" blocks.`,
    );
  });
}

function imageSource(
  source: unknown,
  index: number,
): Extract<ToolResultContentBlock, { type: "image" }>["source"] {
  const value = (typeof source === "object" && source !== null ? source : {}) as Record<
    string,
    unknown
  >;
  if (
    value.type === "base64" &&
    typeof value.media_type === "string" &&
    typeof value.data === "string"
  ) {
    return { type: "base64", media_type: value.media_type, data: value.data };
  }
  if (value.type === "url" && typeof value.url === "string") return { type: "url", url: value.url };
  return fail(
    `content block ${index} is "image" without a usable "source": expected { type: "base64", media_type, data } or { type: "url", url }.`,
  );
}

/** Confirms the result can travel to a provider and into a JSON state: throws if it cannot. */
export function assertSerialisable(result: ToolResult): void {
  if (typeof result.content === "string") return;
  try {
    JSON.stringify(result.content);
  } catch (error) {
    fail(
      `its content could not be serialised (${error instanceof Error ? error.message : String(error)}).`,
    );
  }
}

function fail(reason: string): never {
  throw new InvalidToolResultError(reason);
}

function kindOf(value: unknown): string {
  if (value === null) return "null";
  if (value === undefined) return "undefined";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "object") {
    const type = (value as { type?: unknown }).type;
    return typeof type === "string" ? `a block of type "${type}"` : 'an object without "content"';
  }
  return `a ${typeof value}`;
}

/**
 * Caps the text sent to the model, keeping head and tail and saying what was cut. Never splits a
 * UTF-16 surrogate pair. The full result stays on `tool_end` for the app.
 */
export function capResultContent(
  content: string | ToolResultContentBlock[],
  maxChars: number,
): string | ToolResultContentBlock[] {
  if (typeof content === "string") return capText(content, maxChars);
  let total = 0;
  for (const block of content) if (block.type === "text") total += block.text.length;
  if (total <= maxChars) return content;
  // One budget over all text blocks: the head from the first blocks, the tail from the last, one note between.
  const head = takeText(content, Math.ceil(maxChars * 0.6), "head");
  const tail = takeText(content, Math.floor(maxChars * 0.4), "tail");
  const omitted = total - textLength(head) - textLength(tail);
  return [...head, { type: "text", text: omissionNote(omitted, total, maxChars) }, ...tail];
}

/** Blocks from one end until `budget` characters of text; images within that span are kept. */
function takeText(
  blocks: ToolResultContentBlock[],
  budget: number,
  end: "head" | "tail",
): ToolResultContentBlock[] {
  const ordered = end === "head" ? blocks : [...blocks].reverse();
  const taken: ToolResultContentBlock[] = [];
  for (const block of ordered) {
    if (budget <= 0) break;
    if (block.type !== "text") {
      taken.push(block);
      continue;
    }
    if (block.text.length <= budget) {
      taken.push(block);
      budget -= block.text.length;
      continue;
    }
    const text =
      end === "head"
        ? block.text.slice(0, safeCut(block.text, budget))
        : block.text.slice(safeCut(block.text, block.text.length - budget));
    taken.push({ type: "text", text });
    budget = 0;
  }
  return end === "head" ? taken : taken.reverse();
}

function textLength(blocks: ToolResultContentBlock[]): number {
  let length = 0;
  for (const block of blocks) if (block.type === "text") length += block.text.length;
  return length;
}

function omissionNote(omitted: number, total: number, maxChars: number): string {
  return `[… ${omitted} characters omitted of ${total}: the result was longer than the ${maxChars}-character cap. Ask for a narrower part if you need the middle. …]`;
}

export function capText(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  const headLength = safeCut(text, Math.ceil(maxChars * 0.6));
  const tailStart = safeCut(text, text.length - Math.floor(maxChars * 0.4));
  const omitted = tailStart - headLength;
  return `${text.slice(0, headLength)}\n\n${omissionNote(omitted, text.length, maxChars)}\n\n${text.slice(tailStart)}`;
}

/** Moves a cut index off the second half of a surrogate pair. */
function safeCut(text: string, index: number): number {
  const code = text.charCodeAt(index);
  return code >= 0xdc00 && code <= 0xdfff ? index + 1 : index;
}
