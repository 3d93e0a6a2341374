import type { Message } from "./model/messages.ts";

const brand = Symbol.for("skein.error");

/**
 * Base of every error skein throws or reports. Branded, so `SkeinError.isInstance`
 * works even when two copies of the package are installed side by side.
 */
export class SkeinError extends Error {
  readonly [brand] = true;
  override name = "SkeinError";

  static isInstance(value: unknown): value is SkeinError {
    return typeof value === "object" && value !== null && brand in value;
  }
}

/** A mistake in how the SDK was assembled: an unknown option, a bad value, duplicate tool names. Thrown at once. */
export class ConfigurationError extends SkeinError {
  override name = "ConfigurationError";
}

/** The run was aborted through its signal. Carries a valid transcript: every tool_use answered. */
export class AbortError extends SkeinError {
  override name = "AbortError";
  readonly messages: Message[];
  readonly sessionId: string;

  constructor(options: { messages: Message[]; sessionId: string; reason?: unknown }) {
    super("The run was aborted.", { cause: options.reason });
    this.messages = options.messages;
    this.sessionId = options.sessionId;
  }
}

/** A tool with `timeoutBehavior: "fail_run"` ran past its `timeoutMs`. Reported on the result, never thrown. */
export class ToolTimeoutError extends SkeinError {
  override name = "ToolTimeoutError";
  readonly toolName: string;
  readonly timeoutMs: number;

  constructor(toolName: string, timeoutMs: number) {
    super(`Tool "${toolName}" timed out after ${timeoutMs} ms.`);
    this.toolName = toolName;
    this.timeoutMs = timeoutMs;
  }
}

/** A paused state handed to `resume` is malformed, altered, or does not fit this agent. Thrown before any side effect. */
export class ResumeError extends SkeinError {
  override name = "ResumeError";
}

/** The model could not be reached or answered something the engine cannot use. */
export class ModelError extends SkeinError {
  override name = "ModelError";
  readonly status?: number;

  constructor(message: string, options: { status?: number; cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    if (options.status !== undefined) this.status = options.status;
  }
}

/** The run has no usable model: none given, or a model-name string with no provider available. */
export class MissingModelError extends ModelError {
  override name = "MissingModelError";
}

/** `scriptedModel` was asked for a turn past the end of its script. */
export class ScriptExhaustedError extends ModelError {
  override name = "ScriptExhaustedError";
}

/** Reads a thrown value of any kind (Error, string, undefined, a hostile object) without throwing again. */
export function describeThrown(value: unknown): { name: string; message: string } {
  try {
    if (value instanceof Error) {
      const message = typeof value.message === "string" ? value.message : String(value.message);
      return { name: typeof value.name === "string" ? value.name : "Error", message };
    }
    if (typeof value === "string") return { name: "Error", message: value };
    if (value === undefined) return { name: "Error", message: "undefined was thrown" };
    if (value === null) return { name: "Error", message: "null was thrown" };
    if (typeof value === "object") {
      const message = (value as { message?: unknown }).message;
      if (typeof message === "string") return { name: "Error", message };
      return { name: "Error", message: `a non-Error object was thrown: ${safeJson(value)}` };
    }
    return { name: "Error", message: `${typeof value} was thrown: ${String(value)}` };
  } catch {
    // A Proxy or a getter that throws: say so instead of failing again.
    return { name: "Error", message: "an unreadable value was thrown" };
  }
}

function safeJson(value: unknown): string {
  try {
    const text = JSON.stringify(value);
    return text === undefined ? String(value) : text.slice(0, 200);
  } catch {
    return "(not serialisable)";
  }
}
