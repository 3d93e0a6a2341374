import {
  type AgentEvent,
  type AgentOptions,
  createBareAgent,
  type SDKResultMessage,
  type ToolDefinition,
  type ToolResultBlock,
} from "skein";
import { type ScriptedModel, scriptedModel } from "skein/testing";

export type ToolEndEvent = Extract<AgentEvent, { type: "tool_end" }>;
export type ToolUpdateEvent = Extract<AgentEvent, { type: "tool_update" }>;

export interface ScriptedCall {
  id?: string;
  name: string;
  input: unknown;
}

/** What a user sees of one turn of tool calls: the events, the result and the blocks the model gets back. */
export interface ToolRun {
  result: SDKResultMessage;
  events: AgentEvent[];
  /** The tool_result blocks of the user message that answers the first tool turn. */
  toolResults: ToolResultBlock[];
  toolEnds: ToolEndEvent[];
  updates: ToolUpdateEvent[];
  model: ScriptedModel;
}

/**
 * Plays one model turn that calls the given tools, then a closing text turn, through
 * `agent.stream()`; `onEvent` sees each event as it arrives (to release deferred handlers).
 */
export async function runCalls(
  tools: ToolDefinition[],
  calls: ScriptedCall[],
  options: { onEvent?: (event: AgentEvent) => void; agent?: Partial<AgentOptions> } = {},
): Promise<ToolRun> {
  const model = scriptedModel([{ toolCalls: calls }, { text: "done" }]);
  const agent = createBareAgent({ ...options.agent, model, tools });
  const events: AgentEvent[] = [];
  for await (const event of agent.stream("go")) {
    events.push(event);
    options.onEvent?.(event);
  }
  const last = events.at(-1);
  if (last?.type !== "result") throw new Error("the stream did not end with a result event");
  const result = last as SDKResultMessage;
  return {
    result,
    events,
    toolResults: toolResultBlocks(result),
    toolEnds: events.filter((event): event is ToolEndEvent => event.type === "tool_end"),
    updates: events.filter((event): event is ToolUpdateEvent => event.type === "tool_update"),
    model,
  };
}

/** One call of one tool. */
export function runCall(
  tool: ToolDefinition,
  input: unknown,
  options?: Parameters<typeof runCalls>[2],
): Promise<ToolRun> {
  return runCalls([tool], [{ id: "call_1", name: tool.name, input }], options);
}

/** The tool_result blocks answering the first assistant message with tool calls. */
export function toolResultBlocks(result: SDKResultMessage): ToolResultBlock[] {
  const answer = result.messages[2];
  if (answer?.role !== "user" || typeof answer.content === "string") return [];
  return answer.content.filter((block): block is ToolResultBlock => block.type === "tool_result");
}

/** The text of a tool_result block (string content, or its text blocks joined). */
export function textOfBlock(block: ToolResultBlock | undefined): string {
  if (!block) throw new Error("no tool_result block");
  if (typeof block.content === "string") return block.content;
  return block.content.map((part) => (part.type === "text" ? part.text : "")).join("");
}

/** The line of a validation error about one field path (`- path: ...`). */
export function issueLine(text: string, path: string): string {
  const line = text.split("\n").find((candidate) => candidate.startsWith(`- ${path}: `));
  if (line === undefined) throw new Error(`no line for "${path}" in:\n${text}`);
  return line;
}
