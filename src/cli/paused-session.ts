// `--continue` / `--resume` of a session whose last run paused for approval: this command's
// --allow and --deny rules answer what they cover, the terminal the rest (asked again, as when the
// run paused); what neither can answer leaves the run paused, as it was.

import { handleOf } from "../agents/registry.ts";
import type { Message } from "../core/messages.ts";
import { emptyUsage } from "../core/messages.ts";
import type { Agent, PendingToolCall, SDKResultMessage } from "../index.ts";
import type { ApprovalDecisions, ApprovalOutcome } from "./approve.ts";

/** A paused session as `--continue` finds it in the store. */
export interface PausedSession {
  id: string;
  pending: PendingToolCall[];
  messages: Message[];
}

/**
 * The answers for the paused calls: the agent's rules decide the calls they allow or deny
 * outright, and `mcpAllowed` the MCP calls an --allow rule names (MCP tools are not among the
 * agent's own; resume still checks the deny rules); `ask` is called for the others (none: not
 * called). `interrupted` and `unasked` come back from `ask` as they are.
 */
export async function answerPaused(
  agent: Agent,
  pending: readonly PendingToolCall[],
  ask: (calls: PendingToolCall[]) => Promise<ApprovalOutcome>,
  mcpAllowed: (name: string) => boolean = () => false,
): Promise<ApprovalOutcome> {
  const config = handleOf(agent)?.config;
  const decisions: ApprovalDecisions = {};
  const open: PendingToolCall[] = [];
  for (const call of pending) {
    const tool = config?.tools.get(call.name);
    const verdict = tool
      ? await config?.permissions?.decide(tool, call.input)
      : mcpAllowed(call.name)
        ? { behavior: "allow" as const }
        : undefined;
    if (verdict?.behavior === "allow") decisions[call.id] = true;
    else if (verdict?.behavior === "deny")
      decisions[call.id] = { behavior: "deny", message: verdict.message };
    else open.push(call);
  }
  if (open.length === 0) return { kind: "answered", decisions };
  const asked = await ask(open);
  if (asked.kind !== "answered") return asked;
  return { kind: "answered", decisions: { ...decisions, ...asked.decisions } };
}

/** The paused run as a result, for a command that could not answer it (it stays paused). */
export function stillPaused(session: PausedSession): SDKResultMessage {
  return {
    type: "result",
    subtype: "paused",
    result: "",
    isError: false,
    numTurns: 0,
    sessionId: session.id,
    usage: emptyUsage(),
    totalUsage: emptyUsage(),
    durationMs: 0,
    messages: session.messages,
    steps: [],
    pending: session.pending,
  };
}
