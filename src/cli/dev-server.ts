// `skein dev`: the inspector's HTTP server. Every request needs the token printed with the URL
// (401 without it); a state-changing request (POST) also needs the inspector's own Origin and a
// JSON body (403, 415 otherwise), and a Host naming the loopback address it listens on (403), so
// neither another local user nor a web page open in the browser (DNS rebinding included) can read
// or drive it. What the store holds goes out as JSON, which the page shows as text only.

import { timingSafeEqual } from "node:crypto";
import { lstat, readFile } from "node:fs/promises";
import type { IncomingMessage, ServerResponse } from "node:http";
import path from "node:path";
import {
  type Agent,
  type AgentEvent,
  ConfigurationError,
  forkSession,
  loadSession,
  type PermissionResult,
  ResumeError,
  RewindError,
  SessionConflictError,
  SessionError,
  type SessionStore,
  SkeinError,
  type Steering,
} from "../index.ts";
import { rewindFiles } from "../sessions/rewind.ts";
import { promptText, readSession, type SessionView } from "../sessions/session-view.ts";
import { isValidSessionId } from "../sessions/validate.ts";
import { isInside } from "../tools/workspace.ts";
import { type SessionTimeline, type Timings, textOf, timelineOf } from "./dev-timeline.ts";

/** The page's files, built into dist/ with the command. */
export interface PageAssets {
  js: string;
  css: string;
}

export interface DevServerOptions {
  store: SessionStore;
  /** The secret in the printed URL. */
  token: string;
  /** The workspace rewind writes into (the command's working directory). */
  root: string;
  /** The approval secret the paused runs were sealed with. */
  secret: string | undefined;
  /** The agent that resumes paused runs (created on first use: it needs the provider's options). */
  agent: () => Agent;
  /** The page's script and style; undefined when the build has none (the API still works). */
  assets: () => Promise<PageAssets | undefined>;
  /** How often the live stream looks at the store for changes (other processes' runs). */
  pollMs?: number;
}

/** The largest POST body read (a steering message, a set of answers). */
export const BODY_LIMIT = 64 * 1024;
/** Sessions a listing shows at most, and a search reads at most. */
const LIST_LIMIT = 200;
const SEARCH_LIMIT = 2000;

/** A run this process resumed and still drives. */
interface ActiveRun {
  steering: Steering;
  listeners: Set<(event: LiveEvent) => void>;
}

/** What the live stream sends about a run this process drives. */
type LiveEvent =
  | { type: "text"; text: string }
  | { type: "tool_start"; callId: string; name: string; parentCallId?: string }
  | { type: "tool_end"; callId: string; name: string; isError: boolean; durationMs: number }
  | { type: "end"; subtype: string }
  | { type: "error"; message: string };

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export interface DevServer {
  handle(request: IncomingMessage, response: ServerResponse): void;
  /** The address the server listens on, once known: `http://127.0.0.1:<port>`. */
  setOrigin(origin: string): void;
  /** Ends the live streams and waits for the runs this process drives to stop. */
  close(): Promise<void>;
}

export function createDevServer(options: DevServerOptions): DevServer {
  const { store } = options;
  const token = Buffer.from(options.token);
  let origins: string[] = [];
  let hosts: string[] = [];
  const active = new Map<string, ActiveRun>();
  /** Sessions an approval is being started for: a second click must not resume twice. */
  const starting = new Set<string>();
  const timings = new Map<
    string,
    { startSeq: number; replies: number[]; calls: Map<string, number> }
  >();
  const lastErrors = new Map<string, string>();
  const streams = new Set<ServerResponse>();
  const runs = new Set<Promise<void>>();
  const controller = new AbortController();

  const tokenOf = (request: IncomingMessage, url: URL) => {
    const header = request.headers["x-skein-token"];
    return typeof header === "string" ? header : (url.searchParams.get("token") ?? "");
  };
  const tokenMatches = (given: string) => {
    const bytes = Buffer.from(given);
    return bytes.length === token.length && timingSafeEqual(bytes, token);
  };

  async function route(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(request.url ?? "/", "http://127.0.0.1");
    if (!hosts.includes(request.headers.host ?? ""))
      throw new HttpError(403, "this inspector answers only at the address it printed.");
    if (!tokenMatches(tokenOf(request, url)))
      throw new HttpError(401, "the token is missing or wrong: open the URL skein dev printed.");
    const method = request.method ?? "GET";
    if (method === "POST") {
      const origin = request.headers.origin;
      if (origin === undefined || !origins.includes(origin))
        throw new HttpError(403, "a change must come from the inspector's own page (Origin).");
    } else if (method !== "GET" && method !== "HEAD") {
      response.setHeader("allow", "GET, POST");
      throw new HttpError(405, `${method} is not supported here.`);
    }
    const parts = url.pathname.split("/").filter(Boolean);
    if (method === "GET") {
      if (url.pathname === "/") return page(response);
      if (url.pathname === "/assets/app.js") return asset(response, "js");
      if (url.pathname === "/assets/app.css") return asset(response, "css");
      if (url.pathname === "/api/sessions") return json(response, 200, await sessions(url));
      if (url.pathname === "/api/events") return events(request, response, url);
      if (parts[0] === "api" && parts[1] === "sessions" && parts.length === 3)
        return json(response, 200, await timeline(sessionIdOf(parts[2])));
      if (
        parts[0] === "api" &&
        parts[1] === "sessions" &&
        parts[3] === "rewind" &&
        parts.length === 4
      )
        return json(
          response,
          200,
          await rewindPreview(sessionIdOf(parts[2]), url.searchParams.get("checkpoint") ?? ""),
        );
      throw new HttpError(404, `nothing at ${url.pathname}.`);
    }
    if (parts[0] !== "api" || parts[1] !== "sessions" || parts.length !== 4)
      throw new HttpError(404, `nothing to POST at ${url.pathname}.`);
    const id = sessionIdOf(parts[2]);
    const action = parts[3];
    if (!["approve", "steer", "fork", "rewind"].includes(action ?? ""))
      throw new HttpError(404, `no action "${action}": approve, steer, fork or rewind.`);
    const body = await readJson(request);
    if (action === "approve") return json(response, 202, await approve(id, body));
    if (action === "steer") return json(response, 202, steer(id, body));
    if (action === "fork") return json(response, 201, await fork(id, body));
    return json(response, 200, await rewind(id, body));
  }

  function page(response: ServerResponse): void {
    const query = `?token=${encodeURIComponent(options.token)}`;
    const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>skein dev</title>
<link rel="stylesheet" href="/assets/app.css${query}">
<script type="module" src="/assets/app.js${query}"></script>
</head>
<body><noscript>The inspector needs JavaScript.</noscript></body>
</html>
`;
    send(response, 200, "text/html; charset=utf-8", html);
  }

  async function asset(response: ServerResponse, kind: "js" | "css"): Promise<void> {
    const assets = await options.assets();
    if (!assets) throw new HttpError(404, "the page is not built: run npm run build.");
    send(
      response,
      200,
      kind === "js" ? "text/javascript; charset=utf-8" : "text/css; charset=utf-8",
      assets[kind],
    );
  }

  /** Newest first; with `q`, those whose id or text contains it (case-insensitive). */
  async function sessions(url: URL) {
    const query = (url.searchParams.get("q") ?? "").trim().toLowerCase();
    const listed = await store.list();
    const found: Record<string, unknown>[] = [];
    let scanned = 0;
    for (const info of listed) {
      if (found.length >= LIST_LIMIT || scanned >= (query ? SEARCH_LIMIT : LIST_LIMIT)) break;
      scanned++;
      if (!isValidSessionId(info.sessionId)) continue;
      const row: Record<string, unknown> = {
        sessionId: info.sessionId,
        createdAt: info.createdAt,
        updatedAt: info.updatedAt,
        lastSeq: info.lastSeq,
      };
      let haystack = info.sessionId;
      try {
        const view = await readSession(store, info.sessionId, options.secret);
        if (!view) continue;
        row.status = active.has(info.sessionId) ? "running" : view.status;
        row.prompt = view.checkpoints[0]?.prompt ?? "";
        row.runs = view.checkpoints.length;
        if (query) haystack += `\n${view.messages.map(searchText).join("\n")}`;
      } catch (error) {
        row.status = "damaged";
        row.error = messageOf(error);
      }
      if (query && !haystack.toLowerCase().includes(query)) continue;
      found.push(row);
    }
    return { sessions: found, truncated: scanned < listed.length };
  }

  async function viewOf(id: string): Promise<SessionView> {
    const view = await readSession(store, id, options.secret);
    if (!view) throw new HttpError(404, `no session "${id}" in this store.`);
    return view;
  }

  async function timeline(
    id: string,
  ): Promise<SessionTimeline & { error?: string; live: boolean }> {
    const view = await viewOf(id);
    const shown = timelineOf(view, active.has(id), measured(id, view));
    const error = lastErrors.get(id);
    return { ...shown, live: active.has(id), ...(error !== undefined ? { error } : {}) };
  }

  /** The durations measured for runs this process drove, by reply seq and call id. */
  function measured(id: string, view: SessionView): Timings | undefined {
    const taken = timings.get(id);
    if (!taken) return undefined;
    const replies = new Map<number, number>();
    let index = 0;
    for (const { seq, entry } of view.entries) {
      if (seq <= taken.startSeq) continue;
      if (entry.type !== "reply" && entry.type !== "results_reply" && entry.type !== "partial")
        continue;
      const duration = taken.replies[index++];
      if (duration !== undefined) replies.set(seq, duration);
    }
    return { replies, calls: taken.calls };
  }

  async function approve(id: string, body: unknown) {
    const decisions = field(body, "decisions");
    if (typeof decisions !== "object" || decisions === null || Array.isArray(decisions))
      throw new HttpError(
        400,
        'the body must be { "decisions": { "<call id>": "allow" | "deny" } }.',
      );
    if (active.has(id) || starting.has(id))
      throw new HttpError(409, `session "${id}" has a run in progress in this inspector.`);
    starting.add(id);
    try {
      const session = await loadSession(store, id);
      if (!session) throw new HttpError(404, `no session "${id}" in this store.`);
      if (session.status !== "paused" || !session.pending)
        throw new HttpError(
          409,
          `session "${id}" is ${session.status}, not paused: nothing to approve.`,
        );
      const other = session.pending.find((call) => call.reason !== "approval");
      if (other)
        throw new HttpError(
          409,
          `the run waits for the app's output for call "${other.id}" (${other.name}): the inspector answers approvals only.`,
        );
      const approvals: Record<string, PermissionResult> = {};
      const known = new Set(session.pending.map((call) => call.id));
      for (const [callId, decision] of Object.entries(decisions)) {
        if (!known.has(callId))
          throw new HttpError(400, `call "${callId}" does not wait for approval in this session.`);
        if (decision !== "allow" && decision !== "deny")
          throw new HttpError(400, `the decision for call "${callId}" must be "allow" or "deny".`);
        approvals[callId] =
          decision === "allow"
            ? true
            : { behavior: "deny", message: "The user declined this call (from skein dev)." };
      }
      const missing = [...known].filter((callId) => !(callId in approvals));
      if (missing.length > 0)
        throw new HttpError(400, `answer every waiting call; missing: ${missing.join(", ")}.`);
      let agent: Agent;
      try {
        agent = options.agent();
      } catch (error) {
        throw new HttpError(503, `cannot resume: ${messageOf(error)}`);
      }
      const stream = agent.resumeStream(
        { sessionId: id },
        { approvals, signal: controller.signal },
      );
      const iterator = stream[Symbol.asyncIterator]();
      const record = {
        startSeq: session.lastSeq,
        replies: [] as number[],
        calls: new Map<string, number>(),
      };
      timings.set(id, record);
      lastErrors.delete(id);
      // The first event, or the failure to start (a seal that does not match, say), before answering.
      let first: IteratorResult<AgentEvent>;
      try {
        first = await iterator.next();
      } catch (error) {
        throw new HttpError(409, `the run did not resume: ${messageOf(error)}`);
      }
      const run: ActiveRun = { steering: stream, listeners: new Set() };
      active.set(id, run);
      const driving = drive(id, run, record, first, iterator).finally(() => {
        active.delete(id);
        runs.delete(driving);
      });
      runs.add(driving);
      return { status: "running" };
    } finally {
      starting.delete(id);
    }
  }

  async function drive(
    id: string,
    run: ActiveRun,
    record: { replies: number[]; calls: Map<string, number> },
    first: IteratorResult<AgentEvent>,
    iterator: AsyncIterator<AgentEvent>,
  ): Promise<void> {
    const emit = (event: LiveEvent) => {
      for (const listener of run.listeners) listener(event);
    };
    let turnStarted = Date.now();
    try {
      for (let next = first; !next.done; next = await iterator.next()) {
        const event = next.value;
        const child = "parentCallId" in event && event.parentCallId !== undefined;
        switch (event.type) {
          case "turn_start":
            if (!child) turnStarted = Date.now();
            break;
          case "message":
            if (!child && event.message.role === "assistant")
              record.replies.push(Date.now() - turnStarted);
            break;
          case "text_delta":
            if (!child) emit({ type: "text", text: event.text });
            break;
          case "tool_start":
            emit({
              type: "tool_start",
              callId: event.callId,
              name: event.name,
              ...(child ? { parentCallId: (event as { parentCallId: string }).parentCallId } : {}),
            });
            break;
          case "tool_end":
            record.calls.set(event.callId, event.durationMs);
            emit({
              type: "tool_end",
              callId: event.callId,
              name: event.name,
              isError: event.isError,
              durationMs: event.durationMs,
            });
            break;
          case "result":
            if (event.isError && event.error) lastErrors.set(id, event.error.message);
            emit({ type: "end", subtype: event.subtype });
            break;
        }
      }
    } catch (error) {
      lastErrors.set(id, messageOf(error));
      emit({ type: "error", message: messageOf(error) });
    }
  }

  function steer(id: string, body: unknown) {
    const text = field(body, "text");
    if (typeof text !== "string" || text.trim() === "")
      throw new HttpError(400, 'the body must be { "text": "<a message for the run>" }.');
    const run = active.get(id);
    if (!run)
      throw new HttpError(
        409,
        `no run of session "${id}" is in progress in this inspector: steering reaches only a run it drives.`,
      );
    run.steering.steer(text);
    return { status: "sent" };
  }

  async function fork(id: string, body: unknown) {
    const checkpointId = field(body, "checkpointId");
    if (checkpointId !== undefined && typeof checkpointId !== "string")
      throw new HttpError(400, "checkpointId must be a string from the session's timeline.");
    const sessionId = await forkSession(
      store,
      id,
      checkpointId !== undefined ? { checkpointId } : {},
    );
    return { sessionId };
  }

  /** The files rewinding to `checkpointId` would write: each with its diff, from now to then. */
  async function rewindPreview(id: string, checkpointId: string) {
    const view = await viewOf(id);
    const checkpoint = view.checkpoints.find((each) => each.id === checkpointId);
    if (!checkpoint)
      throw new HttpError(404, `session "${id}" has no checkpoint "${checkpointId}".`);
    const targets = new Map<string, string | null>();
    for (const { seq, entry } of view.entries)
      if (entry.type === "snapshot" && seq > checkpoint.seq && !targets.has(entry.path))
        targets.set(entry.path, entry.content);
    const { createTwoFilesPatch } = await import("diff");
    const files = [];
    for (const [relative, then] of targets) {
      const now = await currentContent(options.root, relative);
      if (now === refused) {
        files.push({ path: relative, change: "refused", diff: "" });
        continue;
      }
      const change =
        now === then ? "unchanged" : then === null ? "delete" : now === null ? "create" : "restore";
      const diff =
        change === "unchanged"
          ? ""
          : createTwoFilesPatch(
              relative,
              relative,
              now ?? "",
              then ?? "",
              "now",
              "at the checkpoint",
            );
      files.push({ path: relative, change, diff });
    }
    return { checkpointId, files };
  }

  async function rewind(id: string, body: unknown) {
    const checkpointId = field(body, "checkpointId");
    if (typeof checkpointId !== "string")
      throw new HttpError(
        400,
        'the body must be { "checkpointId": "<a checkpoint of the session>" }.',
      );
    if (active.has(id))
      throw new HttpError(409, `session "${id}" has a run in progress: rewind after it ends.`);
    return rewindFiles({
      store,
      root: options.root,
      sessionId: id,
      checkpointId,
      secret: options.secret,
    });
  }

  /** Server-sent events: `list` when the sessions change, `session` when this one does, `live`. */
  function events(request: IncomingMessage, response: ServerResponse, url: URL): void {
    const raw = url.searchParams.get("session");
    const id = raw === null || raw === "" ? undefined : sessionIdOf(raw);
    response.writeHead(200, {
      ...SECURITY_HEADERS,
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-store",
      connection: "keep-alive",
    });
    streams.add(response);
    const write = (event: string, data: unknown) => {
      if (!response.writableEnded)
        response.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
    };
    write("hello", { session: id ?? null });
    let listSignature: string | undefined;
    let sessionSeq: number | undefined;
    let looking = false;
    let watched: ActiveRun | undefined;
    const listener = (event: LiveEvent) => write("live", event);
    const look = async () => {
      if (looking) return;
      looking = true;
      try {
        const listed = await store.list();
        const signature = listed
          .slice(0, LIST_LIMIT)
          .map((info) => `${info.sessionId}:${info.lastSeq}:${active.has(info.sessionId)}`)
          .join(",");
        if (listSignature !== undefined && signature !== listSignature) write("list", {});
        listSignature = signature;
        if (id !== undefined) {
          const info = listed.find((each) => each.sessionId === id);
          const seq = info?.lastSeq ?? 0;
          const run = active.get(id);
          const changed = seq !== sessionSeq || run !== watched;
          if (sessionSeq !== undefined && changed)
            write("session", { lastSeq: seq, live: run !== undefined });
          sessionSeq = seq;
          if (run !== watched) {
            watched?.listeners.delete(listener);
            run?.listeners.add(listener);
            watched = run;
          }
        }
      } catch (error) {
        write("problem", { message: messageOf(error) });
      } finally {
        looking = false;
      }
    };
    void look();
    const timer = setInterval(() => void look(), options.pollMs ?? 500);
    const stop = () => {
      clearInterval(timer);
      watched?.listeners.delete(listener);
      streams.delete(response);
    };
    request.on("close", stop);
    response.on("close", stop);
  }

  return {
    handle(request, response) {
      route(request, response).catch((error: unknown) => {
        const [status, message] = statusOf(error);
        if (response.headersSent) {
          response.destroy();
          return;
        }
        json(response, status, { error: message });
      });
    },
    setOrigin(origin) {
      const { port } = new URL(origin);
      origins = [`http://127.0.0.1:${port}`, `http://localhost:${port}`];
      hosts = [`127.0.0.1:${port}`, `localhost:${port}`];
    },
    async close() {
      controller.abort();
      for (const stream of streams) stream.end();
      await Promise.allSettled([...runs]);
    },
  };
}

/** A session id from the path, checked against the store's charset (400 otherwise). */
function sessionIdOf(raw: string | undefined): string {
  let id: string;
  try {
    id = decodeURIComponent(raw ?? "");
  } catch {
    throw new HttpError(400, "the session id is not valid URL text.");
  }
  if (!isValidSessionId(id))
    throw new HttpError(
      400,
      'a session id is 1-128 characters from A-Z, a-z, 0-9, ".", "_", ":" and "-".',
    );
  return id;
}

async function readJson(request: IncomingMessage): Promise<unknown> {
  const type = request.headers["content-type"] ?? "";
  if (!/^application\/json\s*(;|$)/i.test(type))
    throw new HttpError(415, "send the body as JSON (Content-Type: application/json).");
  const declared = Number(request.headers["content-length"] ?? 0);
  if (declared > BODY_LIMIT) throw new HttpError(413, `the body is over ${BODY_LIMIT} bytes.`);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    if (size > BODY_LIMIT) throw new HttpError(413, `the body is over ${BODY_LIMIT} bytes.`);
    chunks.push(chunk as Buffer);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString("utf8"));
  } catch {
    throw new HttpError(400, "the body is not valid JSON.");
  }
}

function field(body: unknown, name: string): unknown {
  return typeof body === "object" && body !== null && !Array.isArray(body)
    ? (body as Record<string, unknown>)[name]
    : undefined;
}

const refused = Symbol("refused");

/** A workspace file's text now; null when absent; `refused` when rewind would not write it. */
async function currentContent(
  root: string,
  relative: string,
): Promise<string | null | typeof refused> {
  if (path.isAbsolute(relative) || !isInside(path.normalize(relative))) return refused;
  const parts = path.normalize(relative).split(path.sep);
  let at = root;
  for (const [index, part] of parts.entries()) {
    at = path.join(at, part);
    const stat = await lstat(at).catch(() => undefined);
    if (!stat) return null;
    const last = index === parts.length - 1;
    if (stat.isSymbolicLink() || (last ? !stat.isFile() || stat.nlink > 1 : !stat.isDirectory()))
      return refused;
  }
  return readFile(path.join(root, relative), "utf8");
}

function searchText(message: { content: unknown }): string {
  try {
    return (
      textOf(message as Parameters<typeof textOf>[0]) ||
      promptText(message as Parameters<typeof promptText>[0])
    );
  } catch {
    return "";
  }
}

const SECURITY_HEADERS = {
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
  "cross-origin-opener-policy": "same-origin",
  "cross-origin-resource-policy": "same-origin",
};

function send(response: ServerResponse, status: number, type: string, body: string): void {
  response.writeHead(status, {
    ...SECURITY_HEADERS,
    "content-type": type,
    "cache-control": "no-store",
    "content-length": Buffer.byteLength(body),
  });
  response.end(body);
}

function json(response: ServerResponse, status: number, value: unknown): void {
  send(response, status, "application/json; charset=utf-8", JSON.stringify(value));
}

function statusOf(error: unknown): [number, string] {
  if (error instanceof HttpError) return [error.status, error.message];
  if (error instanceof SessionError)
    return [error.code === "not_found" ? 404 : error.code === "damaged" ? 422 : 409, error.message];
  if (error instanceof ConfigurationError) return [400, error.message];
  if (
    error instanceof ResumeError ||
    error instanceof RewindError ||
    error instanceof SessionConflictError
  )
    return [409, error.message];
  return [500, messageOf(error)];
}

function messageOf(error: unknown): string {
  if (error instanceof Error)
    return SkeinError.isInstance(error) ? error.message : `${error.name}: ${error.message}`;
  return String(error);
}
