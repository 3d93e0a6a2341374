// `skein dev`'s page: the sessions, newest first, with search; the chosen session's runs; live
// updates from the server's event stream. Plain DOM, every string from the store as text.

import { ApiError, events, get, post, sessionPath } from "./api.ts";
import { fill, h, when } from "./dom.ts";
import { runView } from "./run.ts";
import type { LiveEvent, RewindPreview, SessionRow, Timeline } from "./types.ts";

const state = {
  query: "",
  selected: sessionFromHash(),
  timeline: undefined as Timeline | undefined,
  liveText: "",
  liveTools: [] as string[],
  stream: undefined as EventSource | undefined,
  busy: false,
};

const notice = h("div", { class: "notice", data: { testid: "notice" } });
const list = h("ul", { class: "sessions", data: { testid: "sessions" } });
const detail = h("main", { class: "detail", data: { testid: "detail" } });
const search = h("input", {
  type: "search",
  placeholder: "Search by text or id",
  data: { testid: "search" },
  onInput: () => {
    state.query = search.value;
    void loadList();
  },
});

document.body.append(
  h(
    "header",
    { class: "top" },
    h("h1", {}, "skein dev"),
    h("span", { class: "muted" }, "the sessions of this project"),
    notice,
  ),
  h("div", { class: "layout" }, h("aside", { class: "side" }, search, list), detail),
);

function sessionFromHash(): string | undefined {
  const id = new URLSearchParams(location.hash.slice(1)).get("session");
  return id && /^[A-Za-z0-9._:-]{1,128}$/.test(id) ? id : undefined;
}

function say(text: string, kind: "error" | "info" = "error"): void {
  notice.className = `notice ${kind}`;
  fill(notice, text);
}

async function loadList(): Promise<void> {
  try {
    const query = state.query.trim();
    const { sessions } = await get<{ sessions: SessionRow[] }>(
      `/api/sessions${query ? `?q=${encodeURIComponent(query)}` : ""}`,
    );
    fill(
      list,
      sessions.length === 0 &&
        h("li", { class: "muted" }, query ? "No session matches." : "No sessions yet."),
      sessions.map((session) =>
        h(
          "li",
          {},
          h(
            "button",
            {
              class: `session${session.sessionId === state.selected ? " selected" : ""}`,
              data: { testid: "session-row", sessionId: session.sessionId, status: session.status },
              onClick: () => select(session.sessionId),
            },
            h("span", { class: `badge status-${session.status}` }, session.status),
            h(
              "span",
              { class: "session-prompt" },
              session.prompt || session.error || "(no prompt)",
            ),
            h("span", { class: "session-id muted" }, session.sessionId),
            h("span", { class: "muted" }, when(session.updatedAt)),
          ),
        ),
      ),
    );
  } catch (error) {
    say(messageOf(error));
  }
}

function select(sessionId: string): void {
  state.selected = sessionId;
  state.liveText = "";
  state.liveTools = [];
  history.replaceState(null, "", `${location.search}#session=${encodeURIComponent(sessionId)}`);
  listen();
  void loadList();
  void loadSession();
}

async function loadSession(): Promise<void> {
  const id = state.selected;
  if (!id) {
    fill(detail, h("p", { class: "muted" }, "Choose a session."));
    return;
  }
  try {
    const timeline = await get<Timeline>(sessionPath(id));
    if (state.selected !== id) return;
    state.timeline = timeline;
    if (!timeline.live) {
      state.liveText = "";
      state.liveTools = [];
    }
    drawSession();
  } catch (error) {
    fill(detail, h("p", { class: "error" }, messageOf(error)));
  }
}

function drawSession(): void {
  const timeline = state.timeline;
  if (!timeline) return;
  const busy = state.busy || timeline.live;
  fill(
    detail,
    h(
      "header",
      { class: "session-head" },
      h("h2", { data: { testid: "session-id" } }, timeline.sessionId),
      h(
        "span",
        { class: `badge status-${timeline.status}`, data: { testid: "session-status" } },
        timeline.status,
      ),
      timeline.origin &&
        h(
          "span",
          { class: "muted" },
          `forked from ${timeline.origin.from}${timeline.origin.checkpointId ? ` at ${timeline.origin.checkpointId}` : ""}`,
        ),
      h("span", { class: "spacer" }),
      h(
        "button",
        { class: "small", data: { testid: "fork-session" }, onClick: () => void fork(undefined) },
        "Fork session",
      ),
    ),
    timeline.error &&
      h("div", { class: "error", data: { testid: "session-error" } }, timeline.error),
    timeline.live && liveView(),
    timeline.runs.length === 0 && h("p", { class: "muted" }, "No runs in this session."),
    timeline.runs.map((run, index) =>
      runView(
        run,
        index,
        {
          decide: (decisions) => void decide(decisions),
          fork: (checkpointId) => void fork(checkpointId),
          rewind: (checkpointId, into) => void previewRewind(checkpointId, into),
        },
        busy,
      ),
    ),
  );
}

/** A run this inspector drives: its text as it streams, its tool calls, and the Steer box. */
function liveView(): HTMLElement {
  const input = h("input", {
    type: "text",
    placeholder: "A message for the running agent",
    data: { testid: "steer-input" },
  });
  return h(
    "section",
    { class: "live", data: { testid: "live" } },
    h("h3", {}, "Running now"),
    state.liveTools.length > 0 && h("div", { class: "muted" }, state.liveTools.join(" · ")),
    h("div", { class: "text", data: { testid: "live-text" } }, state.liveText),
    h(
      "form",
      {
        class: "steer",
        onSubmit: (event) => {
          event.preventDefault();
          const text = input.value.trim();
          if (!text || !state.selected) return;
          post(`${sessionPath(state.selected)}/steer`, { text }).then(
            () => {
              input.value = "";
              say(`Sent: ${text}`, "info");
            },
            (error: unknown) => say(messageOf(error)),
          );
        },
      },
      input,
      h("button", { type: "submit", data: { testid: "steer" } }, "Steer"),
    ),
  );
}

async function decide(decisions: Record<string, "allow" | "deny">): Promise<void> {
  const id = state.selected;
  if (!id) return;
  state.busy = true;
  try {
    await post(`${sessionPath(id)}/approve`, { decisions });
    say("The run resumed.", "info");
  } catch (error) {
    say(messageOf(error));
  } finally {
    state.busy = false;
    await loadSession();
  }
}

async function fork(checkpointId: string | undefined): Promise<void> {
  const id = state.selected;
  if (!id) return;
  try {
    const { sessionId } = await post<{ sessionId: string }>(
      `${sessionPath(id)}/fork`,
      checkpointId ? { checkpointId } : {},
    );
    say(`Forked into ${sessionId}.`, "info");
    select(sessionId);
  } catch (error) {
    say(messageOf(error));
  }
}

/** The diff first; Rewind only after it is shown. */
async function previewRewind(checkpointId: string, into: HTMLElement): Promise<void> {
  const id = state.selected;
  if (!id) return;
  try {
    const preview = await get<RewindPreview>(
      `${sessionPath(id)}/rewind?checkpoint=${encodeURIComponent(checkpointId)}`,
    );
    const changes = preview.files.filter((file) => file.change !== "unchanged");
    const refused = preview.files.some((file) => file.change === "refused");
    fill(
      into,
      h("h3", {}, "Rewind to before this run"),
      changes.length === 0 &&
        h("p", { class: "muted" }, "The files are as they were at this checkpoint."),
      changes.map((file) =>
        h(
          "div",
          { class: "rewind-file", data: { testid: "rewind-file" } },
          h(
            "div",
            {},
            h("strong", {}, file.path),
            h("span", { class: "muted" }, ` ${file.change}`),
          ),
          file.diff && h("pre", { class: "diff" }, diffLines(file.diff)),
        ),
      ),
      refused &&
        h("p", { class: "error" }, "Some files cannot be rewound safely; Rewind would refuse."),
      changes.length > 0 &&
        h(
          "button",
          {
            class: "deny",
            data: { testid: "rewind-confirm" },
            onClick: () => {
              post<{ restored: string[]; deleted: string[] }>(`${sessionPath(id)}/rewind`, {
                checkpointId,
              }).then(
                (done) => {
                  say(
                    `Rewound: ${[...done.restored, ...done.deleted.map((p) => `${p} (removed)`)].join(", ") || "nothing to do"}.`,
                    "info",
                  );
                  fill(into);
                },
                (error: unknown) => say(messageOf(error)),
              );
            },
          },
          "Rewind these files",
        ),
      h("button", { class: "small", onClick: () => fill(into) }, "Cancel"),
    );
  } catch (error) {
    say(messageOf(error));
  }
}

/** A unified diff, its added and removed lines marked by class (as text). */
function diffLines(diff: string): HTMLElement[] {
  return diff
    .split("\n")
    .map((line) =>
      h(
        "span",
        { class: line.startsWith("+") ? "add" : line.startsWith("-") ? "del" : "" },
        `${line}\n`,
      ),
    );
}

function listen(): void {
  state.stream?.close();
  const stream = events(state.selected);
  state.stream = stream;
  stream.addEventListener("list", () => void loadList());
  stream.addEventListener("session", () => void loadSession());
  stream.addEventListener("live", (message) => {
    const event = JSON.parse((message as MessageEvent<string>).data) as LiveEvent;
    if (event.type === "text") state.liveText += event.text;
    else if (event.type === "tool_start") state.liveTools.push(`${event.name} started`);
    else if (event.type === "tool_end")
      state.liveTools.push(`${event.name} ${event.isError ? "failed" : "done"}`);
    else if (event.type === "error") say(event.message);
    const box = detail.querySelector<HTMLElement>("[data-testid=live-text]");
    if (box && event.type === "text") box.textContent = state.liveText;
    else if (event.type !== "text") void loadSession();
  });
}

function messageOf(error: unknown): string {
  return error instanceof ApiError || error instanceof Error ? error.message : String(error);
}

window.addEventListener("hashchange", () => {
  const id = sessionFromHash();
  if (id && id !== state.selected) select(id);
});

listen();
void loadList();
void loadSession();
