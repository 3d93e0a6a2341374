// `skein dev`: the inspector's HTTP server. Every request needs the token printed with the URL
// (401 without it); a state-changing request (POST) also needs the inspector's own Origin and a
// JSON body (403, 415 otherwise), and every request a Host naming the loopback address it listens
// on (403), so neither another local user nor a web page open in the browser (DNS rebinding
// included) can read or drive it. What the store holds goes out as JSON, which the page shows as
// text only.

import { timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import {
  type Agent,
  forkSession,
  loadSession,
  type PermissionResult,
  type SessionStore,
} from "../../index.ts";
import { rewindFiles } from "../../sessions/rewind.ts";
import { readSession, type SessionView } from "../../sessions/session-view.ts";
import { isValidSessionId } from "../../sessions/validate.ts";
import { serveEvents } from "./events.ts";
import { rewindPreview } from "./files.ts";
import {
  field,
  HttpError,
  json,
  messageOf,
  readJson,
  send,
  sessionIdOf,
  statusOf,
} from "./http.ts";
import { Busy, LiveRuns } from "./runs.ts";
import { type SessionTimeline, textOf, timelineOf } from "./timeline.ts";

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

/** Sessions a listing shows at most, and a search reads at most. */
const LIST_LIMIT = 200;
const SEARCH_LIMIT = 2000;

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
  const runs = new LiveRuns();
  const streams = new Set<ServerResponse>();

  const tokenMatches = (request: IncomingMessage, url: URL) => {
    const header = request.headers["x-skein-token"];
    const given = Buffer.from(
      typeof header === "string" ? header : (url.searchParams.get("token") ?? ""),
    );
    return given.length === token.length && timingSafeEqual(given, token);
  };

  async function route(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(request.url ?? "/", "http://127.0.0.1");
    if (!hosts.includes(request.headers.host ?? ""))
      throw new HttpError(403, "this inspector answers only at the address it printed.");
    if (!tokenMatches(request, url))
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
    const sessionPath = parts[0] === "api" && parts[1] === "sessions" && parts.length >= 3;
    if (method !== "POST") {
      if (url.pathname === "/") return page(response);
      if (url.pathname === "/assets/app.js") return asset(response, "js");
      if (url.pathname === "/assets/app.css") return asset(response, "css");
      if (url.pathname === "/api/sessions") return json(response, 200, await sessions(url));
      if (url.pathname === "/api/events") {
        const raw = url.searchParams.get("session");
        const sessionId = raw === null || raw === "" ? undefined : sessionIdOf(raw);
        return serveEvents(
          request,
          response,
          { store, runs, pollMs: options.pollMs ?? 500, ...(sessionId ? { sessionId } : {}) },
          streams,
        );
      }
      if (sessionPath && parts.length === 3)
        return json(response, 200, await timeline(sessionIdOf(parts[2])));
      if (sessionPath && parts.length === 4 && parts[3] === "rewind") {
        const id = sessionIdOf(parts[2]);
        const checkpointId = url.searchParams.get("checkpoint") ?? "";
        const preview = await rewindPreview(await viewOf(id), options.root, checkpointId);
        if (!preview)
          throw new HttpError(404, `session "${id}" has no checkpoint "${checkpointId}".`);
        return json(response, 200, preview);
      }
      throw new HttpError(404, `nothing at ${url.pathname}.`);
    }
    if (!sessionPath || parts.length !== 4)
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
    const type = kind === "js" ? "text/javascript" : "text/css";
    send(response, 200, `${type}; charset=utf-8`, assets[kind]);
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
        row.status = runs.get(info.sessionId) ? "running" : view.status;
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
    const live = runs.get(id) !== undefined;
    const shown = timelineOf(view, live, runs.timings(id, view));
    const error = runs.error(id);
    return { ...shown, live, ...(error !== undefined ? { error } : {}) };
  }

  async function approve(id: string, body: unknown) {
    const decisions = field(body, "decisions");
    if (typeof decisions !== "object" || decisions === null || Array.isArray(decisions))
      throw new HttpError(
        400,
        'the body must be { "decisions": { "<call id>": "allow" | "deny" } }.',
      );
    try {
      return await runs.starting(id, async () => {
        const session = await loadSession(store, id);
        if (!session) throw new HttpError(404, `no session "${id}" in this store.`);
        if (session.status !== "paused" || !session.pending)
          throw new HttpError(409, `session "${id}" is ${session.status}: nothing to approve.`);
        const approvals = answers(session.pending, decisions as Record<string, unknown>);
        let agent: Agent;
        try {
          agent = options.agent();
        } catch (error) {
          throw new HttpError(503, `cannot resume: ${messageOf(error)}`);
        }
        const stream = agent.resumeStream({ sessionId: id }, { approvals, signal: runs.signal });
        try {
          await runs.drive(id, session.lastSeq, stream);
        } catch (error) {
          throw new HttpError(409, `the run did not resume: ${messageOf(error)}`);
        }
        return { status: "running" };
      });
    } catch (error) {
      if (error instanceof Busy)
        throw new HttpError(409, `session "${id}" has a run in progress in this inspector.`);
      throw error;
    }
  }

  function steer(id: string, body: unknown) {
    const text = field(body, "text");
    if (typeof text !== "string" || text.trim() === "")
      throw new HttpError(400, 'the body must be { "text": "<a message for the run>" }.');
    const run = runs.get(id);
    if (!run)
      throw new HttpError(
        409,
        `no run of session "${id}" is in progress in this inspector: steering reaches only a run it drives.`,
      );
    run.stream.steer(text);
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

  async function rewind(id: string, body: unknown) {
    const checkpointId = field(body, "checkpointId");
    if (typeof checkpointId !== "string")
      throw new HttpError(
        400,
        'the body must be { "checkpointId": "<a checkpoint of the session>" }.',
      );
    if (runs.busy(id))
      throw new HttpError(409, `session "${id}" has a run in progress: rewind after it ends.`);
    return rewindFiles({
      store,
      root: options.root,
      sessionId: id,
      checkpointId,
      secret: options.secret,
    });
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
      for (const stream of streams) stream.end();
      await runs.close();
    },
  };
}

/**
 * The page's decisions as `resume` takes them: every call waiting for approval answered "allow"
 * or "deny", nothing else; a run waiting for the app's own output cannot be answered here.
 */
function answers(
  pending: { id: string; name: string; reason: string }[],
  decisions: Record<string, unknown>,
): Record<string, PermissionResult> {
  const other = pending.find((call) => call.reason !== "approval");
  if (other)
    throw new HttpError(
      409,
      `the run waits for the app's output for call "${other.id}" (${other.name}): the inspector answers approvals only.`,
    );
  const approvals: Record<string, PermissionResult> = {};
  const known = new Set(pending.map((call) => call.id));
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
  return approvals;
}

function searchText(message: Parameters<typeof textOf>[0]): string {
  try {
    return textOf(message);
  } catch {
    return "";
  }
}
