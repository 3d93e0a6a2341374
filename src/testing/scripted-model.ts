import { type InspectOptions, inspect } from "node:util";
import { ConfigurationError, ScriptExhaustedError } from "../core/errors.ts";
import type { ContentBlock, Usage } from "../core/messages.ts";
import type {
  IncompleteToolCall,
  Model,
  ModelRequest,
  ModelStreamEvent,
  StopReason,
} from "../model/model.ts";
import { untilAborted } from "../run/abortable.ts";

/** One scripted model turn: text and/or tool calls, as the model would send them. */
export interface ScriptedTurn {
  text?: string;
  thinking?: string;
  toolCalls?: { id?: string; name: string; input: unknown }[];
  usage?: Partial<Usage>;
  stopReason?: StopReason;
  incompleteToolCalls?: IncompleteToolCall[];
}

/** A turn, or an Error the model throws on that turn (a failed request). */
export type ScriptEntry = ScriptedTurn | Error;

export type Script =
  | readonly ScriptEntry[]
  | ((request: ModelRequest, index: number) => ScriptEntry | Promise<ScriptEntry>);

export interface ScriptedModel extends Model {
  /**
   * Every request as it was sent: its JSON text, taken when the model was called, read back into
   * objects the first time an entry is read, so what JSON drops (a property set to `undefined`) is
   * not there. A request JSON cannot write is copied whole instead.
   */
  readonly requests: ModelRequest[];
}

/**
 * A model that plays scripted turns, for tests and offline demos: an array (one entry per model
 * call) or a function of the request. A call past the end of an array throws, so the run
 * resolves as failed with a message that says so.
 *
 * @example
 * ```ts
 * import { createBareAgent } from "skein";
 * import { scriptedModel } from "skein/testing";
 *
 * const model = scriptedModel([{ text: "Hello!" }]);
 * const result = await createBareAgent({ model }).run("Say hello.");
 * console.log(result.result, model.requests.length); // Hello! 1
 * ```
 */
export function scriptedModel(script: Script, options: { modelId?: string } = {}): ScriptedModel {
  if (!Array.isArray(script) && typeof script !== "function") {
    throw new ConfigurationError(
      "scriptedModel(script): the script must be an array of turns or a function (request, index) => turn.",
    );
  }
  const requests = inspectable([]);
  return {
    provider: "scripted",
    modelId: options.modelId ?? "scripted",
    requests,
    async *stream(
      request: ModelRequest,
      { signal }: { signal: AbortSignal },
    ): AsyncGenerator<ModelStreamEvent> {
      signal.throwIfAborted();
      const index = requests.length;
      record(requests, index, request);
      // A script function that never settles must not outlive an abort.
      const entry = await untilAborted(entryAt(script, request, index), signal);
      signal.throwIfAborted();
      if (entry instanceof Error) throw entry;
      yield* playTurn(entry, index);
    },
  };
}

/**
 * Keeps `request` as it is now at `requests[index]`. The JSON text a provider would serialise is
 * taken at once and parsed when the entry is first read (then it is a plain element): a deep copy
 * of every request (the whole transcript again each turn) cost two thirds of a scripted turn, and
 * its garbage landed in the run that followed. What JSON does not keep (an `undefined` property,
 * a Date's type) is not kept; a request JSON cannot write at all is copied whole instead.
 */
function record(requests: ModelRequest[], index: number, request: ModelRequest): void {
  let text: string;
  try {
    text = JSON.stringify(request);
  } catch {
    requests[index] = structuredClone(request);
    return;
  }
  const settle = (value: ModelRequest) => {
    Object.defineProperty(requests, index, {
      value,
      writable: true,
      enumerable: true,
      configurable: true,
    });
    return value;
  };
  Object.defineProperty(requests, index, {
    get: () => settle(JSON.parse(text) as ModelRequest),
    set: settle,
    enumerable: true,
    configurable: true,
  });
}

/** `requests` as console.log and util.inspect show it: its entries, not their accessors. */
function inspectable(requests: ModelRequest[]): ModelRequest[] {
  Object.defineProperty(requests, inspect.custom, {
    value: (_depth: number, options: InspectOptions) => inspect([...requests], options),
  });
  return requests;
}

async function entryAt(script: Script, request: ModelRequest, index: number): Promise<ScriptEntry> {
  if (typeof script === "function") return script(request, index);
  const entry = script[index];
  if (entry === undefined) {
    throw new ScriptExhaustedError(
      `scriptedModel: the model was called ${index + 1} times, but the script has only ${script.length} turns. Add a turn, or end the run earlier.`,
    );
  }
  return entry;
}

function* playTurn(turn: ScriptedTurn, index: number): Generator<ModelStreamEvent> {
  const content: ContentBlock[] = [];
  if (turn.thinking) {
    yield { type: "thinking_delta", thinking: turn.thinking };
    content.push({ type: "thinking", thinking: turn.thinking, signature: "scripted" });
  }
  if (turn.text) {
    yield { type: "text_delta", text: turn.text };
    content.push({ type: "text", text: turn.text });
  }
  (turn.toolCalls ?? []).forEach((call, position) => {
    content.push({
      type: "tool_use",
      id: call.id ?? `toolu_${index + 1}_${position + 1}`,
      name: call.name,
      input: call.input,
    });
  });
  for (const block of content) {
    if (block.type === "tool_use")
      yield { type: "tool_call", id: block.id, name: block.name, input: block.input };
  }
  const event: ModelStreamEvent = {
    type: "message",
    message: { role: "assistant", content },
    stopReason: turn.stopReason ?? (turn.toolCalls?.length ? "tool_use" : "end_turn"),
  };
  if (turn.usage) event.usage = turn.usage;
  if (turn.incompleteToolCalls) event.incompleteToolCalls = turn.incompleteToolCalls;
  yield event;
}
