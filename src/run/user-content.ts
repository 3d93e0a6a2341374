// What the app (or a state it hands back) may put in the transcript as the user's own new words:
// a prompt, a steering message, a follow-up, a paused state's queued messages. Text and images
// only: tool calls and their results come from the model and skein, so a block of any other type
// could forge them (a second, made-up result for a call skein answered).

import { ConfigurationError, ResumeError } from "../core/errors.ts";
import type { ImageBlock, TextBlock } from "../core/messages.ts";
import { describeValue } from "../core/options.ts";
import type { QueuedMessage } from "./types.ts";

export type UserBlock = TextBlock | ImageBlock;
export type UserContent = string | UserBlock[];

/** What a run starts from: text, or content blocks (text and images only) for the first user message. */
export type Prompt = UserContent;

const TEXT_KEYS = new Set(["type", "text"]);
const IMAGE_KEYS = new Set(["type", "source"]);
const BASE64_KEYS = new Set(["type", "media_type", "data"]);
const URL_KEYS = new Set(["type", "url"]);

/**
 * The content as a plain copy (each field read once, so nothing the caller keeps a reference to,
 * or a getter that answers differently later, reaches the transcript), or what is wrong with it.
 */
export function readUserContent(
  value: unknown,
): { ok: true; content: UserContent } | { ok: false; problem: string } {
  if (typeof value === "string") return { ok: true, content: value };
  if (!Array.isArray(value))
    return {
      ok: false,
      problem: `must be a string or an array of content blocks, received ${describeValue(value)}`,
    };
  const blocks: UserBlock[] = [];
  const length = value.length;
  for (let index = 0; index < length; index++) {
    const read = readBlock(value[index]);
    if (typeof read === "string") return { ok: false, problem: `has block ${index} ${read}` };
    blocks.push(read);
  }
  return { ok: true, content: blocks };
}

/** A prompt (or a steering message) from the app: its plain copy, or a `ConfigurationError`. */
export function assertPrompt(where: string, noun: string, value: unknown): UserContent {
  const read = readUserContent(value);
  if (!read.ok) throw new ConfigurationError(`${where}: the ${noun} ${read.problem}.`);
  return read.content;
}

/**
 * The queued messages of a state, as plain copies; anything that is not one is refused (never
 * silently dropped), and so is content the app could not have queued (only text and images).
 */
export function queuedOf(queued: unknown): QueuedMessage[] {
  if (queued === undefined) return [];
  const malformed = () =>
    new ResumeError(
      "resume: the state's queued messages are not { origin, message } entries; pass the state unchanged.",
    );
  if (!Array.isArray(queued)) throw malformed();
  return queued.map((entry: unknown, index): QueuedMessage => {
    const { origin, message } = (typeof entry === "object" && entry !== null ? entry : {}) as {
      origin?: unknown;
      message?: { role?: unknown; content?: unknown } | null;
    };
    if ((origin !== "steer" && origin !== "follow_up") || message?.role !== "user")
      throw malformed();
    const read = readUserContent(message.content);
    if (!read.ok)
      throw new ResumeError(
        `resume: the state's queued message ${index} ${read.problem}; a state is resumed as it was paused, and steer() and followUp() queue nothing else.`,
      );
    return { origin, message: { role: "user", content: read.content } };
  });
}

/** The block's plain copy, or why it is refused (a phrase after "block N"). */
function readBlock(block: unknown): UserBlock | string {
  if (typeof block !== "object" || block === null || Array.isArray(block))
    return `that is ${describeValue(block)}, not a content block ({ type: "text", text } or { type: "image", source })`;
  const record = block as Record<string, unknown>;
  const type = record.type;
  if (type === "text") {
    const text = record.text;
    if (typeof text !== "string")
      return `of type "text" whose text is ${describeValue(text)}; it must be a string`;
    return unknownKey(record, TEXT_KEYS, 'a "text" block') ?? { type: "text", text };
  }
  if (type === "image") {
    const source = readSource(record.source);
    if (typeof source === "string") return source;
    return unknownKey(record, IMAGE_KEYS, 'an "image" block') ?? { type: "image", source };
  }
  const named = typeof type === "string" ? `"${type}"` : describeValue(type);
  return `of type ${named}; only "text" and "image" blocks may be given (tool calls and their results come from the model and skein, never from the app)`;
}

function readSource(source: unknown): ImageBlock["source"] | string {
  const wrong = `of type "image" without a usable source: expected { type: "base64", media_type, data } or { type: "url", url } with string fields`;
  if (typeof source !== "object" || source === null || Array.isArray(source)) return wrong;
  const record = source as Record<string, unknown>;
  const type = record.type;
  if (type === "base64") {
    const mediaType = record.media_type;
    const data = record.data;
    if (typeof mediaType !== "string" || typeof data !== "string") return wrong;
    return (
      unknownKey(record, BASE64_KEYS, "a base64 image source") ?? {
        type: "base64",
        media_type: mediaType,
        data,
      }
    );
  }
  if (type === "url") {
    const url = record.url;
    if (typeof url !== "string") return wrong;
    return unknownKey(record, URL_KEYS, "a url image source") ?? { type: "url", url };
  }
  return wrong;
}

/** A field skein would not send is refused rather than dropped. */
function unknownKey(
  record: Record<string, unknown>,
  known: ReadonlySet<string>,
  what: string,
): string | undefined {
  const extra = Object.keys(record).find((key) => !known.has(key));
  if (extra === undefined) return undefined;
  return `with the field "${extra}", which skein does not send (${what} has only ${[...known].join(", ")})`;
}
