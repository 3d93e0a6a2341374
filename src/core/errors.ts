import { homedir } from "node:os";
import type { Message, Usage } from "./messages.ts";

const brand = Symbol.for("skein.error");

/**
 * Base of every error skein throws or reports. Branded, so `SkeinError.isInstance`
 * works even when two copies of the package are installed side by side.
 */
export class SkeinError extends Error {
  override name = "SkeinError";

  constructor(message?: string, options?: ErrorOptions) {
    // No `[cause]: undefined` in what `console.log` prints when there is no cause.
    super(message, options?.cause === undefined ? undefined : options);
  }

  /** On the prototype, not the instance: `console.log(error)` shows no internal symbol. */
  get [brand](): true {
    return true;
  }

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
  /** The run's model calls and tokens up to the abort (a resumed run counts from its start). */
  readonly numTurns?: number;
  readonly usage?: Usage;
  /** `usage` plus what the child runs of agent tools spent, aborted ones included. */
  readonly totalUsage?: Usage;

  constructor(options: {
    messages: Message[];
    sessionId: string;
    reason?: unknown;
    numTurns?: number;
    usage?: Usage;
    totalUsage?: Usage;
  }) {
    super("The run was aborted.", { cause: options.reason });
    this.messages = options.messages;
    this.sessionId = options.sessionId;
    if (options.numTurns !== undefined) this.numTurns = options.numTurns;
    if (options.usage !== undefined) this.usage = options.usage;
    if (options.totalUsage !== undefined) this.totalUsage = options.totalUsage;
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

/** `steer()` or `followUp()` after the run's result was decided: nothing was queued. */
export class RunEndedError extends SkeinError {
  override name = "RunEndedError";
}

/** A `beforeModelCall` hook threw or returned something skein cannot use; reported on the result. */
export class HookError extends SkeinError {
  override name = "HookError";
}

/** The next request cannot fit the model's context window, even with old results removed. Reported on the result. */
export class ContextWindowError extends SkeinError {
  override name = "ContextWindowError";
}

/** The model's final answer failed the agent's `output` schema more times than `outputRetries` allows. Reported on the result. */
export class OutputValidationError extends SkeinError {
  override name = "OutputValidationError";
}

/** A paused state handed to `resume` is malformed, altered, or does not fit this agent. Thrown before any side effect. */
export class ResumeError extends SkeinError {
  override name = "ResumeError";
}

/** Why a session cannot be used as asked: its last run is unfinished, its log is damaged, or it does not exist. */
export class SessionError extends SkeinError {
  override name = "SessionError";
  readonly code: "unfinished" | "damaged" | "not_found";
  readonly sessionId?: string;
  /** The seq of the entry at fault, for `damaged`. */
  readonly seq?: number;

  constructor(
    message: string,
    options: {
      code: "unfinished" | "damaged" | "not_found";
      sessionId?: string;
      seq?: number;
      cause?: unknown;
    },
  ) {
    super(message, { cause: options.cause });
    this.code = options.code;
    if (options.sessionId !== undefined) this.sessionId = options.sessionId;
    if (options.seq !== undefined) this.seq = options.seq;
  }
}

/**
 * A session store's append was refused because `seq` is not the session's last seq + 1: another
 * writer appended first (or the caller skipped ahead). Nothing of that append was written.
 */
export class SessionConflictError extends SkeinError {
  override name = "SessionConflictError";
  readonly sessionId: string;
  /** The seq the refused append asked for. */
  readonly seq: number;
  /** The session's last seq when the append was refused (0: not stored), where the store knows it. */
  readonly lastSeq?: number;

  constructor(options: { sessionId: string; seq: number; lastSeq?: number }) {
    const found =
      options.lastSeq === undefined
        ? "it is not the session's last seq + 1"
        : `the session's last seq is ${options.lastSeq}, so the next append must be seq ${options.lastSeq + 1}`;
    super(
      `Session "${options.sessionId}": append at seq ${options.seq} refused: ${found}. Nothing was written; another writer may have appended first: read the session again before writing.`,
    );
    this.sessionId = options.sessionId;
    this.seq = options.seq;
    if (options.lastSeq !== undefined) this.lastSeq = options.lastSeq;
  }
}

/** A session store could not do what was asked (a database error, a closed store). `cause` has the original. */
export class SessionStoreError extends SkeinError {
  override name = "SessionStoreError";
}

/** `rewindFiles` refused or failed; no file was left half rewound. `paths` are the ones at fault. */
export class RewindError extends SkeinError {
  override name = "RewindError";
  readonly paths: string[];

  constructor(message: string, options: { paths?: string[]; cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.paths = options.paths ?? [];
  }
}

/** The model could not be reached or answered something the engine cannot use. */
export class ModelError extends SkeinError {
  override name = "ModelError";
  readonly status?: number;
  /** HTTP attempts made (1 + retries), for failures of a provider's request. */
  attempts?: number;

  constructor(message: string, options: { status?: number; cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    if (options.status !== undefined) this.status = options.status;
  }
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

// ---------------------------------------------------------------- provider errors

/** An HTTP error answer from a model API, with the provider's own message. */
export class APIError extends ModelError {
  override name = "APIError";
  /** The provider's error type, such as `rate_limit_error` or `overloaded_error`. */
  readonly type?: string;
  readonly requestId?: string;
  readonly headers: Record<string, string>;

  constructor(
    message: string,
    options: {
      status?: number;
      type?: string;
      requestId?: string;
      headers?: Record<string, string>;
      cause?: unknown;
    } = {},
  ) {
    super(message, { status: options.status, cause: options.cause });
    if (options.type !== undefined) this.type = options.type;
    if (options.requestId !== undefined) this.requestId = options.requestId;
    this.headers = options.headers ?? {};
  }
}

export class BadRequestError extends APIError {
  override name = "BadRequestError";
}
export class AuthenticationError extends APIError {
  override name = "AuthenticationError";
}
export class PermissionDeniedError extends APIError {
  override name = "PermissionDeniedError";
}
export class NotFoundError extends APIError {
  override name = "NotFoundError";
}
export class ConflictError extends APIError {
  override name = "ConflictError";
}
export class UnprocessableEntityError extends APIError {
  override name = "UnprocessableEntityError";
}
export class RateLimitError extends APIError {
  override name = "RateLimitError";
}
export class InternalServerError extends APIError {
  override name = "InternalServerError";
}
/** Anthropic's 529, or an `overloaded_error` inside a stream. */
export class OverloadedError extends APIError {
  override name = "OverloadedError";
}

/** The API could not be reached, or the connection broke before the turn was complete. */
export class APIConnectionError extends ModelError {
  override name = "APIConnectionError";
}

/** No response headers within `timeoutMs`, no stream event within `idleTimeoutMs`, or an attempt past `totalTimeoutMs`. */
export class APITimeoutError extends APIConnectionError {
  override name = "APITimeoutError";
}

/**
 * The API answered with data that does not follow its protocol (malformed stream data). Not
 * retried, unless made `retryable` (Gemini's `MALFORMED_FUNCTION_CALL`: the model may do better
 * on the next attempt).
 */
export class ProtocolError extends ModelError {
  override name = "ProtocolError";
  /** Worth another attempt while nothing of the turn was passed on. */
  readonly retryable?: boolean;

  constructor(message: string, options: { cause?: unknown; retryable?: boolean } = {}) {
    super(message, { cause: options.cause });
    if (options.retryable) this.retryable = true;
  }
}

/**
 * The model's answer was blocked by the provider's safety or content filters (Gemini's
 * `finishReason` `SAFETY`, `RECITATION`, `PROHIBITED_CONTENT`, ..., or a prompt refused with
 * `promptFeedback.blockReason`). `reason` is the provider's own word for it. Not retried: the
 * same request gets the same answer; change the prompt.
 */
export class ContentFilterError extends ModelError {
  override name = "ContentFilterError";
  readonly reason: string;

  constructor(message: string, options: { reason: string; cause?: unknown }) {
    super(message, { cause: options.cause });
    this.reason = options.reason;
  }
}

/** The typed error for an HTTP status, carrying the provider's message. */
export function apiErrorFor(
  status: number,
  message: string,
  options: { type?: string; requestId?: string; headers?: Record<string, string> } = {},
): APIError {
  const init = { ...options, status };
  if (status === 529 || options.type === "overloaded_error")
    return new OverloadedError(message, init);
  switch (status) {
    case 400:
      return new BadRequestError(message, init);
    case 401:
      return new AuthenticationError(message, init);
    case 403:
      return new PermissionDeniedError(message, init);
    case 404:
      return new NotFoundError(message, init);
    case 409:
      return new ConflictError(message, init);
    case 422:
      return new UnprocessableEntityError(message, init);
    case 429:
      return new RateLimitError(message, init);
    default:
      return status >= 500 ? new InternalServerError(message, init) : new APIError(message, init);
  }
}

const STACK_FRAME = /^\s*at .*$/gm;

/**
 * The message of a thrown value as the model may read it (RELIABILITY B1): no stack frames, and
 * the working directory and home directory written as "." and "~" so no host path leaks. Apps
 * get the raw message on the result's `details`.
 */
export function messageForModel(value: unknown): string {
  let text = describeThrown(value)
    .message.replace(STACK_FRAME, "")
    .replace(/\n{2,}/g, "\n")
    .trim();
  for (const [path, replacement] of hostPaths())
    if (path.length > 1) text = text.split(path).join(replacement);
  return text || "(no message)";
}

function hostPaths(): [string, string][] {
  // The longer path first: the working directory usually lies inside the home directory.
  return [
    [process.cwd(), "."],
    [homedir(), "~"],
  ].sort((a, b) => b[0]!.length - a[0]!.length) as [string, string][];
}
