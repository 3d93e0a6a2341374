/**
 * The engine benchmarks' workload: the scripted model (timed), the baseline loop it is measured
 * against, and the tools. The baseline does the least a tool loop can: the same scripted model,
 * the same handlers, and nothing else (no validation, no events, no scheduling, no hooks). The
 * scripted model records every request (its JSON text) in both, so that cost cancels out.
 */
import { setTimeout as sleep } from "node:timers/promises";
import type {
  ContentBlock,
  Message,
  Model,
  ModelToolSpec,
  ToolDefinition,
  ToolResultBlock,
  ToolUseBlock,
} from "skein";
import type { ScriptedTurn } from "skein/testing";
import { z } from "zod";
import { skein, testing } from "./support.ts";

const { createBareAgent, PARALLEL_CALLS_HINT, tool } = skein;
const { scriptedModel } = testing;

// ---------------------------------------------------------------- the model and the baseline loop

/**
 * A model (the scripted one unless another is given), timed: `enter[i]` is when model call i
 * began, `inside[i]` the time spent inside its stream (mostly recording the request's JSON).
 */
export interface TimedModel extends Model {
  enter: number[];
  inside: number[];
}

export function timedModel(
  script: ScriptedTurn[],
  inner: Model = scriptedModel(script),
): TimedModel {
  const enter: number[] = [];
  const inside: number[] = [];
  return {
    provider: inner.provider,
    modelId: inner.modelId,
    enter,
    inside,
    async *stream(request, options) {
      let spent = 0;
      let start = performance.now();
      enter.push(start);
      const iterator = inner.stream(request, options)[Symbol.asyncIterator]();
      try {
        while (true) {
          const step = await iterator.next();
          spent += performance.now() - start;
          if (step.done) return;
          yield step.value;
          start = performance.now();
        }
      } finally {
        inside.push(spent);
      }
    },
  };
}

/**
 * For a diagnostic only: the same turns, played without the scripted model's record of each
 * request and without keeping the records, so that the engine's heap stays small.
 */
export function replayModel(script: ScriptedTurn[]): Model {
  let index = 0;
  return {
    provider: "replay",
    modelId: "replay",
    async *stream() {
      const turn = script[index++]!;
      const content: ContentBlock[] = turn.text ? [{ type: "text", text: turn.text }] : [];
      for (const call of turn.toolCalls ?? []) {
        const block = {
          type: "tool_use" as const,
          id: call.id!,
          name: call.name,
          input: call.input,
        };
        content.push(block);
        yield { type: "tool_call", id: block.id, name: block.name, input: block.input };
      }
      const stopReason = turn.toolCalls ? "tool_use" : "end_turn";
      yield { type: "message", message: { role: "assistant", content }, stopReason };
    },
  };
}

type Handler = (input: any) => Promise<unknown>;

/** The least a tool loop can do: call the model, run its calls with Promise.all, push results. */
async function baselineRun(options: {
  model: Model;
  handlers: Record<string, Handler>;
  tools: ToolDefinition[];
}): Promise<Message[]> {
  const { model, handlers } = options;
  // The system prompt and tool list skein sends, so that the model copies the same request.
  const system = PARALLEL_CALLS_HINT;
  const tools: ModelToolSpec[] = options.tools.map((definition) => ({
    name: definition.name,
    description: definition.description,
    input_schema: definition.inputSchema,
  }));
  const signal = new AbortController().signal;
  const messages: Message[] = [{ role: "user", content: "go" }];
  while (true) {
    let reply: Message | undefined;
    for await (const event of model.stream(
      { system, messages: messages.slice(), tools },
      { signal },
    )) {
      if (event.type !== "message") continue;
      reply = event.message;
      break;
    }
    messages.push(reply!);
    const calls = (reply!.content as ContentBlock[]).filter(
      (block): block is ToolUseBlock => block.type === "tool_use",
    );
    if (calls.length === 0) return messages;
    const results = await Promise.all(
      calls.map(
        async (call): Promise<ToolResultBlock> => ({
          type: "tool_result",
          tool_use_id: call.id,
          content: (await handlers[call.name]!(call.input)) as string,
          is_error: false,
        }),
      ),
    );
    messages.push({ role: "user", content: results });
  }
}

// ---------------------------------------------------------------- the tools

/** A cheap tool: validation and the engine are all there is to measure. */
export const echoHandler = async ({ n }: { n: number }) => String(n);
const echo = tool("echo", "Echo a number.", z.object({ n: z.number() }), echoHandler, {
  isConcurrencySafe: () => true,
});

export const waitHandler = async () => {
  await sleep(50);
  return "ok";
};
export const wait = tool("wait", "Wait 50 ms.", z.object({ i: z.number() }), waitHandler, {
  isConcurrencySafe: () => true,
});

/** `turns` turns of `callsPerTurn` calls, then a closing text turn. */
export function toolTurns(
  turns: number,
  callsPerTurn: number,
  name: "echo" | "wait",
): ScriptedTurn[] {
  const script: ScriptedTurn[] = [];
  for (let turn = 0; turn < turns; turn++) {
    const toolCalls = [];
    for (let call = 0; call < callsPerTurn; call++)
      toolCalls.push({
        id: `c${turn}_${call}`,
        name,
        input: name === "echo" ? { n: call } : { i: call },
      });
    script.push({ toolCalls });
  }
  script.push({ text: "done" });
  return script;
}

export const runSkein = (model: Model) =>
  createBareAgent({ model, tools: [echo], maxTurns: 1_000 }).run("go");
export const runBaseline = (model: Model) =>
  baselineRun({ model, handlers: { echo: echoHandler }, tools: [echo] });
