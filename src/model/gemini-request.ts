// skein's transcript (Anthropic's Messages shape) as Gemini `contents`, and the tools as
// `functionDeclarations`.

import type { ContentBlock, Message, ProviderData, ToolResultBlock } from "../core/messages.ts";
import type { ModelToolSpec } from "./model.ts";

export interface GeminiPart {
  text?: string;
  thought?: boolean;
  thoughtSignature?: string;
  inlineData?: { mimeType: string; data: string };
  fileData?: { mimeType: string; fileUri: string };
  functionCall?: { id?: string; name: string; args: unknown };
  functionResponse?: { id?: string; name: string; response: Record<string, unknown> };
}

export interface GeminiContent {
  role: "user" | "model";
  parts: GeminiPart[];
}

/**
 * The transcript as `contents`. A block's `thoughtSignature` goes back on the same part, byte for
 * byte, when it came from this protocol at this `origin`; a transcript from another provider is
 * sent without them (and without its thinking, which Gemini cannot read back). Tool results go
 * back as `functionResponse` parts in the order of the calls they answer, with the call's id when
 * the model gave one, and its name. Consecutive messages of one role are one turn.
 *
 * Gemini 3 (and later) refuses a step whose first function call carries no signature; a call it
 * did not make (another provider's, another origin's, a transcript written by hand) has none to
 * give back, so on those models the first such call of a message carries Google's documented
 * placeholder, `skip_thought_signature_validator`, never another provider's data.
 */
export function wireContents(
  messages: readonly Message[],
  origin: string,
  model?: string,
): GeminiContent[] {
  const placeholder = needsSignatures(model);
  const contents: GeminiContent[] = [];
  // A call's name and whether its id was the model's, for the results that answer it.
  const calls = new Map<string, { name: string; id: string | undefined; position: number }>();
  for (const message of messages) {
    if (message.role === "assistant" && message.content.length === 0) continue;
    const role = message.role === "assistant" ? "model" : "user";
    const parts =
      typeof message.content === "string"
        ? [{ text: message.content }]
        : role === "model"
          ? modelParts(message.content, origin, calls, placeholder)
          : userParts(message.content, calls);
    if (parts.length === 0) continue;
    const previous = contents.at(-1);
    if (previous?.role === role) previous.parts.push(...parts);
    else contents.push({ role, parts });
  }
  return contents;
}

/** Google's documented signature for a function call the model did not make. */
export const SKIP_SIGNATURE = "skip_thought_signature_validator";

/** Gemini 3 and later validate the signature of each step's first call; earlier models do not. */
function needsSignatures(model: string | undefined): boolean {
  const major = /(?:^|\/)gemini-(\d+)/.exec(model ?? "")?.[1];
  return major !== undefined && Number(major) >= 3;
}

function ours(data: ProviderData | undefined, origin: string): ProviderData | undefined {
  return data && data.wire === "gemini" && data.origin === origin ? data : undefined;
}

function modelParts(
  blocks: readonly ContentBlock[],
  origin: string,
  calls: Map<string, { name: string; id: string | undefined; position: number }>,
  placeholder: boolean,
): GeminiPart[] {
  const parts: GeminiPart[] = [];
  let position = 0;
  for (const block of blocks) {
    switch (block.type) {
      case "text": {
        const data = ours(block.providerData, origin);
        if (block.text === "" && !data?.thoughtSignature) break;
        parts.push(
          data?.thoughtSignature
            ? { text: block.text, thoughtSignature: data.thoughtSignature }
            : { text: block.text },
        );
        break;
      }
      case "thinking": {
        // Thinking from another provider (or without its origin) is not Gemini's to read back.
        const data = ours(block.providerData, origin);
        if (!data) break;
        const part: GeminiPart = { text: block.thinking, thought: true };
        if (data.thoughtSignature) part.thoughtSignature = data.thoughtSignature;
        parts.push(part);
        break;
      }
      case "tool_use": {
        const data = ours(block.providerData, origin);
        // A call from another provider keeps its id: Gemini echoes any id it is given.
        const id = block.providerData?.madeId ? undefined : block.id;
        calls.set(block.id, { name: block.name, id, position: position++ });
        const part: GeminiPart = {
          functionCall: { ...(id ? { id } : {}), name: block.name, args: block.input ?? {} },
        };
        if (data?.thoughtSignature) part.thoughtSignature = data.thoughtSignature;
        // The message's first call: Gemini 3 wants a signature on it (the model's, or the placeholder).
        else if (placeholder && position === 1) part.thoughtSignature = SKIP_SIGNATURE;
        parts.push(part);
        break;
      }
      case "image":
        parts.push(imagePart(block));
        break;
      default:
        // redacted_thinking (Anthropic's own), and a tool_result out of place: nothing Gemini reads.
        break;
    }
  }
  return parts;
}

function userParts(
  blocks: readonly ContentBlock[],
  calls: Map<string, { name: string; id: string | undefined; position: number }>,
): GeminiPart[] {
  const responses: { position: number; parts: GeminiPart[] }[] = [];
  const rest: GeminiPart[] = [];
  for (const block of blocks) {
    if (block.type === "tool_result") {
      const call = calls.get(block.tool_use_id);
      responses.push({
        position: call?.position ?? Number.MAX_SAFE_INTEGER,
        parts: functionResponse(block, call),
      });
    } else if (block.type === "text") {
      if (block.text !== "") rest.push({ text: block.text });
    } else if (block.type === "image") rest.push(imagePart(block));
  }
  // In call order (a stable sort keeps the order of results for the same position).
  responses.sort((a, b) => a.position - b.position);
  return [...responses.flatMap((response) => response.parts), ...rest];
}

/**
 * A result as `{ output }` or `{ error }`, the keys Gemini's documentation names; the images a
 * result holds follow it as `inlineData` parts.
 */
function functionResponse(
  block: ToolResultBlock,
  call: { name: string; id: string | undefined } | undefined,
): GeminiPart[] {
  const images: GeminiPart[] = [];
  let text: string;
  if (typeof block.content === "string") text = block.content;
  else {
    text = "";
    for (const part of block.content) {
      if (part.type === "text") text += (text ? "\n" : "") + part.text;
      else images.push(imagePart(part));
    }
  }
  const response = block.is_error ? { error: text } : { output: text };
  const id = call ? call.id : block.tool_use_id;
  return [
    {
      functionResponse: {
        ...(id ? { id } : {}),
        name: call?.name ?? "unknown",
        response,
      },
    },
    ...images,
  ];
}

function imagePart(block: Extract<ContentBlock, { type: "image" }>): GeminiPart {
  if (block.source.type === "base64")
    return { inlineData: { mimeType: block.source.media_type, data: block.source.data } };
  return { fileData: { mimeType: mimeTypeOf(block.source.url), fileUri: block.source.url } };
}

function mimeTypeOf(url: string): string {
  const extension = /\.([a-z0-9]+)(?:[?#]|$)/i.exec(url)?.[1]?.toLowerCase();
  switch (extension) {
    case "png":
      return "image/png";
    case "gif":
      return "image/gif";
    case "webp":
      return "image/webp";
    default:
      return "image/jpeg";
  }
}

/** The tools as one `functionDeclarations` entry, each schema as `parametersJsonSchema`. */
export function wireTools(tools: readonly ModelToolSpec[]): unknown[] {
  return [
    {
      functionDeclarations: tools.map((tool) => ({
        name: tool.name,
        description: tool.description,
        parametersJsonSchema: tool.input_schema,
      })),
    },
  ];
}
