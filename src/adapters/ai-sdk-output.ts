// ai's `toModelOutput`: what a tool's output becomes for the model, as skein's tool result.

import type { ToolResultContentBlock } from "../core/messages.ts";
import { InvalidToolResultError, toolResultFromData } from "../tools/result.ts";
import type { ToolResult } from "../tools/types.ts";
import { describeArgument, isObject } from "./shape.ts";

/** A result already made from `toModelOutput`: the adapter's `toResult` passes it through. */
export class ModelOutputResult {
  constructor(readonly result: ToolResult) {}
}

/** The adapter's `toResult`: a converted output as it is, anything else as ai would send it. */
export function aiSdkToolResult(value: unknown): ToolResult {
  return value instanceof ModelOutputResult ? value.result : toolResultFromData(value);
}

/**
 * ai's `ToolResultOutput` as skein's result: text as is, JSON as its text, the error forms as
 * error results, `content` as text and image blocks. The tool's own output stays on `tool_end`
 * as the result's `details`. A part skein's results cannot carry (a file) is an error result that
 * says so, not dropped.
 */
export function fromModelOutput(output: unknown, raw: unknown): ModelOutputResult {
  const result = convert(output);
  if (raw !== undefined) result.details = raw;
  return new ModelOutputResult(result);
}

function convert(output: unknown): ToolResult {
  if (!isObject(output)) return fail(`it returned ${describeArgument(output)}`);
  switch (output.type) {
    case "text":
      return { content: text(output.value, "text") };
    case "json":
      return { content: toolResultFromData(output.value).content };
    case "error-text":
      return { content: text(output.value, "error-text"), isError: true };
    case "error-json":
      return { content: toolResultFromData(output.value).content, isError: true };
    case "execution-denied":
      return {
        content:
          typeof output.reason === "string" && output.reason
            ? output.reason
            : "The tool's execution was denied.",
        isError: true,
      };
    case "content":
      if (!Array.isArray(output.value)) return fail('its "content" output has no array value');
      return { content: output.value.map(part) };
    default:
      return fail(`it returned an output of type ${describeArgument(output.type)}`);
  }
}

function part(value: unknown, index: number): ToolResultContentBlock {
  if (!isObject(value)) return fail(`content part ${index} is ${describeArgument(value)}`);
  const { type } = value;
  if (type === "text") return { type: "text", text: text(value.text, `content part ${index}`) };
  const image = type === "image-data" || (type === "media" && isImageType(value.mediaType));
  if (image && typeof value.data === "string" && typeof value.mediaType === "string")
    return {
      type: "image",
      source: { type: "base64", media_type: value.mediaType, data: value.data },
    };
  if (type === "image-url" && typeof value.url === "string")
    return { type: "image", source: { type: "url", url: value.url } };
  return fail(
    `content part ${index} is of type ${describeArgument(type)}${typeof value.mediaType === "string" ? ` (${value.mediaType})` : ""}, which skein's tool results cannot carry (text and images only)`,
  );
}

const isImageType = (mediaType: unknown) =>
  typeof mediaType === "string" && mediaType.startsWith("image/");

function text(value: unknown, what: string): string {
  if (typeof value === "string") return value;
  return fail(`its ${what} value is ${describeArgument(value)}, not a string`);
}

function fail(reason: string): never {
  throw new InvalidToolResultError(`toModelOutput failed: ${reason}.`);
}
