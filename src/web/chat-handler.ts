// chatHandler: a skein agent behind `useChat`'s default transport (POST to send, GET to resume).

import type { Agent } from "../agents/agent.ts";
import { ConfigurationError } from "../core/errors.ts";
import { assertFunction, assertKnownOptions, describeValue } from "../core/options.ts";
import type { SessionStore } from "../core/session-store.ts";
import type { AgentEvent } from "../run/types.ts";
import type { Prompt } from "../run/user-content.ts";
import {
  type Authorize,
  checkAuthorized,
  checkSessionId,
  DEFAULT_BODY_LIMIT,
  HttpRefusal,
  jsonError,
  LiveRun,
  pump,
  readJsonBody,
} from "./http.ts";
import {
  type ApprovalAnswer,
  approvalKey,
  checkedApprovals,
  currentApprovalIds,
  pauseOf,
  readView,
  rewindForRegenerate,
} from "./sessions.ts";
import { sseBytes, UI_MESSAGE_STREAM_HEADERS } from "./sse.ts";

export interface ChatHandlerOptions {
  /** The agent that answers; it must log to `sessionStore`. */
  agent: Agent<any>;
  /** The agent's session store: each chat id is a session, its history read from here. */
  sessionStore: SessionStore;
  /**
   * The key approval ids are made with, the same in every process serving the chats. Default:
   * `$SKEIN_APPROVAL_SECRET`, else a key of this process (its approval ids die with it).
   */
  approvalSecret?: string | undefined;
  /** Who may read or drive a session (default: everyone); `false` is a 403. */
  authorize?: Authorize | undefined;
  /** The largest request body in bytes; default 1 MB. A larger one is a 413. */
  maxBodyBytes?: number | undefined;
}

const OPTION_KEYS: ReadonlySet<string> = new Set([
  "agent",
  "sessionStore",
  "approvalSecret",
  "authorize",
  "maxBodyBytes",
]);

/** A web-standard request handler: `(request) => Promise<Response>`. */
export type WebHandler = (request: Request) => Promise<Response>;

export interface SharedOptions {
  agent: Agent<any>;
  store: SessionStore;
  key: string;
  authorize: Authorize | undefined;
  limit: number;
}

export function checkHandlerOptions(prefix: string, options: ChatHandlerOptions): SharedOptions {
  assertKnownOptions(prefix, options, OPTION_KEYS);
  if (!options || typeof options.agent?.stream !== "function")
    throw new ConfigurationError(`${prefix}: agent must be an agent from createAgent().`);
  const store = options.sessionStore;
  if (!store || typeof store.read !== "function" || typeof store.append !== "function")
    throw new ConfigurationError(
      `${prefix}: sessionStore must be the agent's session store (memoryStore(), sqliteStore(), postgresStore()), received ${describeValue(store)}.`,
    );
  assertFunction(prefix, "authorize", options.authorize);
  if (
    options.approvalSecret !== undefined &&
    (typeof options.approvalSecret !== "string" || options.approvalSecret.length < 16)
  )
    throw new ConfigurationError(
      `${prefix}: approvalSecret must be a random string of at least 16 characters.`,
    );
  const limit = options.maxBodyBytes ?? DEFAULT_BODY_LIMIT;
  if (!Number.isSafeInteger(limit) || limit < 1)
    throw new ConfigurationError(
      `${prefix}: maxBodyBytes must be a positive integer, received ${describeValue(limit)}.`,
    );
  return {
    agent: options.agent,
    store,
    key: approvalKey(options.approvalSecret),
    authorize: options.authorize,
    limit,
  };
}

/**
 * Serves `useChat`'s default transport unchanged:
 * - `POST` `{ id, messages, trigger, messageId }`: `id` is the session. A user message (the last
 *   of `messages`; history comes from the store, never from the client) starts a run; approval
 *   answers (`addToolApprovalResponse`) resume the paused run; `regenerate-message` runs the
 *   prompt again on a branch of the session.
 * - `GET .../<id>/stream` (`useChat({ resume: true })`): the message in progress from its start,
 *   then live; 204 when nothing of that chat runs in this process.
 */
export function chatHandler(options: ChatHandlerOptions): WebHandler {
  const shared = checkHandlerOptions("chatHandler()", options);
  const live = new Map<string, LiveRun>();
  return async (request) => {
    try {
      if (request.method === "GET") return await reconnect(shared, live, request);
      if (request.method === "POST") return await submit(shared, live, request);
      return jsonError(
        405,
        "method_not_allowed",
        "Use POST to send, GET .../<chatId>/stream to resume.",
      );
    } catch (error) {
      if (error instanceof HttpRefusal) return error.response();
      return jsonError(500, "internal", "The chat request failed.");
    }
  };
}

/** The chat id of a GET: the path's last two segments are `<chatId>/stream`. */
export function chatIdOfPath(request: Request): string {
  const segments = new URL(request.url).pathname.split("/").filter(Boolean);
  if (segments.length < 2 || segments.at(-1) !== "stream")
    throw new HttpRefusal(404, "not_found", "GET .../<chatId>/stream resumes a chat's stream.");
  let id: string;
  try {
    id = decodeURIComponent(segments.at(-2)!);
  } catch {
    throw new HttpRefusal(400, "bad_session_id", "The chat id in the path is not valid.");
  }
  return checkSessionId(id, "The chat id in the path");
}

async function reconnect(
  shared: SharedOptions,
  live: Map<string, LiveRun>,
  request: Request,
): Promise<Response> {
  const sessionId = chatIdOfPath(request);
  await checkAuthorized(shared.authorize, request, sessionId);
  const running = live.get(sessionId);
  if (!running || running.done) return new Response(null, { status: 204 });
  return new Response(running.follow(), { headers: UI_MESSAGE_STREAM_HEADERS });
}

async function submit(
  shared: SharedOptions,
  live: Map<string, LiveRun>,
  request: Request,
): Promise<Response> {
  const body = await readJsonBody(request, shared.limit);
  const sessionId = checkSessionId(body.id, "The body's id (the chat id)");
  await checkAuthorized(shared.authorize, request, sessionId);
  const trigger = body.trigger ?? "submit-message";
  if (trigger !== "submit-message" && trigger !== "regenerate-message")
    throw new HttpRefusal(
      400,
      "malformed_body",
      `trigger must be "submit-message" or "regenerate-message", received ${describeValue(trigger)}.`,
    );
  if (!Array.isArray(body.messages))
    throw new HttpRefusal(400, "malformed_body", "messages must be an array of UI messages.");
  // One run per chat at a time: taken before the first await, so two requests cannot both start.
  if (live.has(sessionId))
    throw new HttpRefusal(409, "run_in_progress", "A run of this chat is in progress.");
  const running = new LiveRun();
  live.set(sessionId, running);
  let started = false;
  try {
    const run = await startRun(shared, sessionId, trigger, body);
    started = true;
    const source = sseBytes(run, {
      approvalId: async (call) => {
        ids ??= await currentApprovalIds(shared.store, shared.key, sessionId);
        const id = ids.get(call.id);
        if (id === undefined) throw new Error(`no approval id for call ${call.id}`);
        return id;
      },
    });
    let ids: Map<string, string> | undefined;
    void pump(running, source).finally(() => {
      if (live.get(sessionId) === running) live.delete(sessionId);
    });
    return new Response(running.follow(), { headers: UI_MESSAGE_STREAM_HEADERS });
  } finally {
    if (!started) live.delete(sessionId);
  }
}

async function startRun(
  shared: SharedOptions,
  sessionId: string,
  trigger: string,
  body: Record<string, any>,
): Promise<AsyncIterable<AgentEvent>> {
  const { agent, store, key } = shared;
  if (trigger === "regenerate-message") {
    const { prompt } = await rewindForRegenerate(store, sessionId, body.messageId);
    return agent.stream(prompt as Prompt, { sessionId });
  }
  const last = body.messages.at(-1);
  if (typeof last !== "object" || last === null || !Array.isArray(last.parts))
    throw new HttpRefusal(
      400,
      "malformed_body",
      "The last message must be a UI message with parts.",
    );
  if (last.role === "user") {
    const prompt = promptOf(last.parts);
    if (pauseOf(await readView(store, sessionId)))
      throw new HttpRefusal(
        409,
        "awaiting_approval",
        "This chat's run waits for approval: answer the pending calls first.",
      );
    return agent.stream(prompt, { sessionId });
  }
  if (last.role === "assistant") {
    const answers = approvalAnswersOf(last.parts);
    if (answers.length === 0)
      throw new HttpRefusal(
        400,
        "malformed_body",
        "The last message is the assistant's but carries no approval answers.",
      );
    const approvals = await checkedApprovals(store, key, sessionId, answers);
    return agent.resumeStream({ sessionId }, { approvals });
  }
  throw new HttpRefusal(
    400,
    "malformed_body",
    "The last message must be the user's or the assistant's.",
  );
}

/** The text of a user message's parts (text parts only). */
export function promptOf(parts: unknown[]): string {
  const texts: string[] = [];
  for (const part of parts) {
    if (typeof part !== "object" || part === null) continue;
    const { type, text } = part as { type?: unknown; text?: unknown };
    if (type === "text" && typeof text === "string") texts.push(text);
  }
  const prompt = texts.join("\n");
  if (!prompt.trim()) throw new HttpRefusal(400, "empty_message", "The user message has no text.");
  return prompt;
}

function approvalAnswersOf(parts: unknown[]): ApprovalAnswer[] {
  const answers: ApprovalAnswer[] = [];
  for (const part of parts) {
    if (typeof part !== "object" || part === null) continue;
    const { state, approval } = part as { state?: unknown; approval?: any };
    if (state !== "approval-responded") continue;
    if (typeof approval !== "object" || approval === null)
      throw new HttpRefusal(
        400,
        "malformed_approval",
        "An approval-responded part has no approval.",
      );
    answers.push({ approvalId: approval.id, approved: approval.approved, reason: approval.reason });
  }
  return answers;
}
