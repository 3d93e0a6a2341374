// A run as the page draws it: its prompt, its turns (a model call and its tool calls), the calls a
// paused run waits for with Approve / Deny, and Fork / Rewind at its checkpoint.

import { duration, h, show } from "./dom.ts";
import type { CallView, PendingCall, RunView, TurnView, Usage } from "./types.ts";

export interface RunActions {
  /** Answers the paused run's calls: call id -> "allow" | "deny". */
  decide(decisions: Record<string, "allow" | "deny">): void;
  fork(checkpointId: string): void;
  rewind(checkpointId: string, into: HTMLElement): void;
}

export function runView(
  run: RunView,
  index: number,
  actions: RunActions,
  busy: boolean,
): HTMLElement {
  const tokens = usageText(run.usage);
  return h(
    "section",
    { class: `run run-${run.status}`, data: { testid: "run", status: run.status } },
    h(
      "header",
      { class: "run-head" },
      h("span", { class: "run-index" }, `Run ${index + 1}`),
      h(
        "span",
        { class: `badge status-${run.status}`, data: { testid: "run-status" } },
        run.status,
      ),
      tokens && h("span", { class: "muted" }, tokens),
      h("span", { class: "spacer" }),
      h(
        "button",
        {
          class: "small",
          title: "a new session with the conversation before this run's prompt",
          data: { testid: "fork-here" },
          onClick: () => actions.fork(run.checkpointId),
        },
        "Fork here",
      ),
      run.files.length > 0 &&
        h(
          "button",
          {
            class: "small",
            title: "put the files this run and later ones changed back as they were",
            data: { testid: "rewind" },
            disabled: busy,
            onClick: (event) => {
              const section = (event.target as HTMLElement).closest("section");
              const into = section?.querySelector<HTMLElement>(".rewind");
              if (into) actions.rewind(run.checkpointId, into);
            },
          },
          "Rewind files…",
        ),
    ),
    h("div", { class: "prompt", data: { testid: "prompt" } }, run.prompt),
    h("div", { class: "rewind" }),
    run.turns.map((turn, turnIndex) => turnView(turn, turnIndex)),
    run.pending && run.pending.length > 0 && pendingView(run.pending, actions, busy),
    run.result !== undefined &&
      h(
        "div",
        { class: "answer", data: { testid: "answer" } },
        h("strong", {}, "Answer "),
        run.result,
      ),
    run.error &&
      h("div", { class: "error" }, `${run.error.name ?? "Error"}: ${run.error.message ?? ""}`),
    run.files.length > 0 &&
      h("div", { class: "muted files" }, `Files changed: ${run.files.join(", ")}`),
  );
}

function turnView(turn: TurnView, index: number): HTMLElement {
  const facts = [
    usageText(turn.usage),
    turn.stopReason,
    turn.durationMs !== undefined ? duration(turn.durationMs) : "",
  ].filter(Boolean);
  return h(
    "div",
    { class: "turn", data: { testid: "turn" } },
    h(
      "div",
      { class: "turn-head" },
      h("span", {}, `Turn ${index + 1} · model call`),
      h("span", { class: "muted" }, facts.join(" · ")),
      turn.partial && h("span", { class: "badge status-error" }, "cut short"),
    ),
    turn.thinking && h("details", {}, h("summary", {}, "thinking"), h("pre", {}, turn.thinking)),
    turn.text && h("div", { class: "text", data: { testid: "model-text" } }, turn.text),
    turn.calls.map((call) => callView(call)),
    turn.userMessages.map((text) =>
      h("div", { class: "steered" }, h("strong", {}, "Steering "), text),
    ),
  );
}

function callView(call: CallView): HTMLElement {
  const facts = [
    call.status,
    call.durationMs !== undefined ? duration(call.durationMs) : "",
  ].filter(Boolean);
  return h(
    "details",
    {
      class: `call call-${call.status}`,
      data: { testid: "call", callId: call.id },
      open: call.status === "pending",
    },
    h(
      "summary",
      {},
      h("span", { class: "call-name" }, call.name),
      h("span", { class: `badge status-${call.status}` }, facts.join(" · ")),
      call.waiting &&
        h(
          "span",
          { class: "muted" },
          call.waiting.reason === "approval"
            ? `waits for approval${call.waiting.approvalReason ? `: ${call.waiting.approvalReason}` : ""}`
            : `waits (${call.waiting.reason})`,
        ),
    ),
    h("div", { class: "label" }, "Input"),
    h("pre", { data: { testid: "call-input" } }, show(call.input)),
    call.result !== undefined &&
      h("div", { class: "label" }, call.status === "error" ? "Error" : "Result"),
    call.result !== undefined && h("pre", { data: { testid: "call-result" } }, call.result),
    call.files && h("div", { class: "muted" }, `Changed: ${call.files.join(", ")}`),
    call.children &&
      call.children.length > 0 &&
      h(
        "div",
        { class: "children" },
        h("div", { class: "label" }, "Child agent's calls"),
        call.children.map((child) => callView(child)),
      ),
  );
}

/** The calls a paused run waits for; when each has its answer, the run resumes. */
function pendingView(pending: PendingCall[], actions: RunActions, busy: boolean): HTMLElement {
  const decisions: Record<string, "allow" | "deny"> = {};
  const approvals = pending.filter((call) => call.reason === "approval");
  const decide = (call: PendingCall, decision: "allow" | "deny", row: HTMLElement) => {
    decisions[call.id] = decision;
    row.dataset.decision = decision;
    for (const button of row.querySelectorAll("button")) button.disabled = true;
    row.querySelector(".decision")?.replaceChildren(decision === "allow" ? "approved" : "denied");
    if (approvals.every((each) => decisions[each.id] !== undefined)) actions.decide(decisions);
  };
  return h(
    "div",
    { class: "pending", data: { testid: "pending" } },
    h("h3", {}, "Waiting for you"),
    pending.map((call) => {
      const row: HTMLElement = h(
        "div",
        { class: "pending-call", data: { testid: "pending-call", callId: call.id } },
        h(
          "div",
          {},
          h("span", { class: "call-name" }, call.name),
          call.parentCallId &&
            h("span", { class: "muted" }, ` in the child run of ${call.parentCallId}`),
          h(
            "span",
            { class: "muted" },
            ` ${call.approvalReason ?? (call.reason === "approval" ? "asks by default" : `waits for the app (${call.reason})`)}`,
          ),
        ),
        h("pre", {}, show(call.input)),
        call.reason === "approval"
          ? h(
              "div",
              { class: "buttons" },
              h(
                "button",
                {
                  class: "approve",
                  data: { testid: "approve" },
                  disabled: busy,
                  onClick: () => decide(call, "allow", row),
                },
                "Approve",
              ),
              h(
                "button",
                {
                  class: "deny",
                  data: { testid: "deny" },
                  disabled: busy,
                  onClick: () => decide(call, "deny", row),
                },
                "Deny",
              ),
              h("span", { class: "decision muted" }),
            )
          : h("div", { class: "muted" }, "The app that paused this run answers it (toolOutputs)."),
      );
      return row;
    }),
  );
}

function usageText(usage: Usage | undefined): string {
  if (!usage) return "";
  const cached = usage.cacheReadInputTokens ? `, ${usage.cacheReadInputTokens} cached` : "";
  return `${usage.inputTokens} in${cached} / ${usage.outputTokens} out tokens`;
}
