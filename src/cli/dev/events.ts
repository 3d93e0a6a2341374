// `skein dev`: the page's live updates, as server-sent events. The store is looked at every
// `pollMs` (runs of other processes and workers show up too): `list` when the sessions changed,
// `session` when the watched one did; `live` carries a run this inspector drives as it goes.

import type { IncomingMessage, ServerResponse } from "node:http";
import type { SessionStore } from "../../index.ts";
import { messageOf, SECURITY_HEADERS } from "./http.ts";
import type { ActiveRun, LiveEvent, LiveRuns } from "./runs.ts";

/** Sessions whose changes the list watches (the newest). */
const WATCHED = 200;

export function serveEvents(
  request: IncomingMessage,
  response: ServerResponse,
  options: { store: SessionStore; runs: LiveRuns; sessionId?: string; pollMs: number },
  streams: Set<ServerResponse>,
): void {
  const { store, runs, sessionId } = options;
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
  write("hello", { session: sessionId ?? null });
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
        .slice(0, WATCHED)
        .map((info) => `${info.sessionId}:${info.lastSeq}:${runs.get(info.sessionId) ? 1 : 0}`)
        .join(",");
      if (listSignature !== undefined && signature !== listSignature) write("list", {});
      listSignature = signature;
      if (sessionId !== undefined) {
        const seq = listed.find((each) => each.sessionId === sessionId)?.lastSeq ?? 0;
        const run = runs.get(sessionId);
        if (sessionSeq !== undefined && (seq !== sessionSeq || run !== watched))
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
  const timer = setInterval(() => void look(), options.pollMs);
  const stop = () => {
    clearInterval(timer);
    watched?.listeners.delete(listener);
    streams.delete(response);
  };
  request.on("close", stop);
  response.on("close", stop);
}
