// `openai({ api: "responses" })`: the OpenAI Responses API, streamed and stateless.

import type { APIError } from "../core/errors.ts";
import type { ModelRequest, ModelStreamEvent } from "./model.ts";
import { restoreOptionals } from "./openai-strict.ts";
import { ResponsesDecoder } from "./responses-decoder.ts";
import { applyResponsesSettings, responsesInput, responsesTools } from "./responses-request.ts";
import { streamWithRetries, type TransportOptions } from "./transport.ts";

export interface ResponsesSetup {
  endpoint: string;
  headers: Record<string, string>;
  transport: TransportOptions;
  readError(status: number, headers: Record<string, string>, text: string): APIError;
  modelId: string;
  maxTokens: number | undefined;
  strictTools: boolean;
  structuredOutputs: boolean;
}

/** The stream of one Responses call: the body built from the request, then the shared transport. */
export function streamResponses(
  setup: ResponsesSetup,
  request: ModelRequest,
  signal: AbortSignal,
): AsyncIterable<ModelStreamEvent> {
  // The origin the reasoning items come from: they go back only there.
  const origin = new URL(setup.endpoint).origin;
  const body: Record<string, unknown> = {
    model: request.modelName ?? setup.modelId,
    input: responsesInput(request.messages, origin),
    store: false,
    include: ["reasoning.encrypted_content"],
    stream: true,
  };
  if (request.system) body.instructions = request.system;
  const maxTokens = request.settings?.maxOutputTokens ?? request.maxTokens ?? setup.maxTokens;
  if (maxTokens !== undefined) body.max_output_tokens = maxTokens;
  if (request.tools.length) {
    body.tools = responsesTools(request.tools, setup.strictTools);
    body.parallel_tool_calls = true;
  }
  applyResponsesSettings(body, request);
  if (setup.structuredOutputs && request.output) {
    // Not strict, as on Chat Completions: the engine validates the answer itself.
    body.text = {
      format: {
        type: "json_schema",
        name: request.output.name,
        schema: request.output.schema,
        strict: false,
      },
    };
  }
  if (request.sessionId !== undefined) body.prompt_cache_key = request.sessionId;
  const restore = setup.strictTools
    ? (name: string, input: unknown) =>
        restoreOptionals(input, request.tools.find((tool) => tool.name === name)?.input_schema)
    : undefined;
  return streamWithRetries({
    url: setup.endpoint,
    // A copy per call: a user's fetch may change what it is given.
    headers: { ...setup.headers },
    body,
    signal,
    transport: setup.transport,
    readError: setup.readError,
    createDecoder: () => new ResponsesDecoder(origin, restore),
  });
}
