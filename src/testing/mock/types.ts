import type { ScriptedTurn } from "../scripted-model.ts";

/** The wire protocols the mock server speaks. */
export type MockProtocol = "anthropic" | "openai" | "gemini";

/**
 * A position in a stream, counted in SSE events as sent: `n` means "after the first `n` events",
 * so 0 is before the first one. A negative number counts from the end: -1 is before the last
 * event (Anthropic `message_stop`, OpenAI `data: [DONE]`).
 *
 * The events, in order. Anthropic: `message_start`, `ping`, then for each block (thinking, text,
 * each tool call) `content_block_start`, its deltas, `content_block_stop`; then `message_delta`
 * and `message_stop`. Text and thinking are sent one word per delta; a thinking block ends with a
 * `signature_delta`; a tool call's `input_json_delta`s are an empty `partial_json` followed by
 * three fragments of its JSON (fewer for a JSON text under three characters). OpenAI: a chunk
 * with the role, one chunk per word of reasoning (`reasoning_content`, as DeepSeek sends it) and
 * of text, for each tool call one chunk with its id and name and three chunks of `arguments`,
 * a chunk with `finish_reason`, the usage chunk when the request set
 * `stream_options.include_usage`, and `data: [DONE]`.
 */
export type StreamPosition = number;

/** An error the server reports, in the protocol's own error shape. Each field has a default. */
export interface MockErrorSpec {
  /** Anthropic `error.type` / OpenAI `error.type`. Defaults follow the status (429 `rate_limit_error`, 529 `overloaded_error`, ...). */
  type?: string;
  message?: string;
  /** OpenAI `error.code` (Anthropic has none). */
  code?: string | number | null;
  /** OpenAI `error.param`, such as `messages.[3].role` (Anthropic has none). */
  param?: string | null;
}

/**
 * One turn of a mock server script: what the model answers (the fields of a `scriptedModel`
 * turn), plus faults to inject. Without `times`, every fault applies to every request for the
 * turn; with it, to the first `times` requests only, after which the turn plays plainly.
 *
 * Content fields (from `ScriptedTurn`): `text`, `thinking` (an Anthropic thinking block with a
 * signature; OpenAI `reasoning_content`), `toolCalls` (`id` defaults to `toolu_mock_<turn>_<n>` /
 * `call_mock_<turn>_<n>`), `usage` (defaults estimated from the sizes of the request and the
 * answer; on OpenAI `prompt_tokens` is `inputTokens + cacheReadInputTokens` and `cached_tokens`
 * is `cacheReadInputTokens`), `stopReason` (Anthropic names; sent to OpenAI as `stop`,
 * `tool_calls` or `length`). A `max_tokens` (or `length`) stop with tool calls cuts the last
 * call's JSON input in half, as a model cut off mid-call would: never valid JSON (P13). In a
 * non-streamed Anthropic answer that call is left out, as it could not be parsed.
 *
 * A request the real API would refuse is answered 400 in the API's own error shape and
 * words before the script is asked (see `MockServerOptions.validate`): Anthropic more than four
 * `cache_control` breakpoints, a first message not from the user, roles that do not alternate,
 * an empty message or text block, a `tool_use` without its `tool_result` in the next message, a
 * `tool_result` for an id the previous message did not use, thinking without its signature,
 * `temperature` or `top_p` outside 0..1, a `tool_choice` without tools, naming a tool the
 * request does not carry, or forcing a call with thinking on, an `output_config.format` schema
 * with an object not closed by `additionalProperties: false`; OpenAI a `tool` message that
 * answers no call of the assistant message before it, `tool_calls` not followed by a `tool`
 * message for each call, `temperature` outside 0..2, `top_p` outside 0..1, more than four
 * `stop` sequences, a `tool_choice` without tools or naming a function the request does not
 * carry, a `response_format` json_schema without a valid name. Every field the client sent
 * (settings, `response_format`, `output_config`) is in `requests[i].body`. A structured-output
 * request is answered with the turn's `text`, as is.
 *
 * Faults are checked strictly (an unknown option is an error). `gapMs`, `endAfter`,
 * `keepAlive`, `errorEvent`, `malformed`, `chunkBytes`, `crlf` and `trickleMs` shape a streamed
 * answer only; `status`, `rawBody`, `headers`, `delayMs`, `hang`, `dropConnection`, `cutAfter`
 * and `stallAfter` apply to both. When several positions coincide, `malformed` is sent first, then
 * `errorEvent`, then `cutAfter`, `stallAfter`, `trickleMs` and `endAfter` take effect, in that
 * order.
 */
export interface MockTurn extends Omit<ScriptedTurn, "incompleteToolCalls"> {
  /** The model id reported in the answer. Default: the request's `model` (P16: an endpoint that remaps names). */
  model?: string;

  /** Apply this turn's faults to the first `times` requests for it only; later requests get the plain turn (P1: 429 then success). */
  times?: number;

  /**
   * Answer with this HTTP status (400 or more) and a JSON error body in the protocol's shape,
   * whether or not the request streams: Anthropic `{"type":"error","error":{type,message}}`,
   * OpenAI `{"error":{message,type,param,code}}`. A 404 names the request's model.
   */
  status?: number;
  /** The fields of the error body sent with `status`. */
  error?: MockErrorSpec;
  /** Answer with this body as is, instead of JSON (with `status`, default 200). */
  rawBody?: string;
  /** With `status`: answer with an HTML error page as a proxy would (P3: a 502 from nginx). */
  html?: boolean;
  /** The `content-type` of `rawBody` / `html`. Default `text/html; charset=utf-8`. */
  contentType?: string;
  /** Extra response headers, such as `retry-after`, `retry-after-ms`, `x-should-retry`. */
  headers?: Record<string, string>;

  /** Wait this long before sending the response headers (a slow first byte). */
  delayMs?: number;
  /** Accept the request and never answer: no headers, ever, until the client gives up or the server closes (P5). */
  hang?: boolean;
  /** Reset the connection as soon as the request arrived, before any headers (P5). */
  dropConnection?: boolean;

  /** Wait this long between two SSE events (slow chunks; longer than the client's idle limit for P9). */
  gapMs?: number;
  /**
   * Send the first N events, then reset the TCP connection (a cut connection: P8). On a
   * non-streamed answer any value sends the headers and half of the JSON body, then resets.
   */
  cutAfter?: StreamPosition;
  /**
   * Send the first N events, then end the response cleanly, without the events after them:
   * `endAfter: -1` is a stream without Anthropic's `message_stop` or OpenAI's `[DONE]` (P12).
   * An OpenAI stream that still had its `finish_reason` and usage chunk is a complete turn, as
   * some servers send no `[DONE]`; with `stream_options.include_usage`, `endAfter: -3` ends it
   * before the `finish_reason` (cut).
   */
  endAfter?: StreamPosition;
  /**
   * Send the first N events, then nothing more (headers arrived, the body stalls), keeping the
   * connection open until the client gives up or the server closes. `stallAfter: 0` is P9.
   * On a non-streamed answer any value sends the headers and half of the JSON body, then stalls.
   */
  stallAfter?: StreamPosition;
  /**
   * While the stream is otherwise silent (during `gapMs` waits and a stall), send a keep-alive
   * every `everyMs`: an SSE comment `: keep-alive` (default), or an Anthropic `ping` event
   * (OpenAI has none: a comment is sent). A number is `everyMs`. Keep-alives are not counted as
   * events (P10).
   */
  keepAlive?: number | { everyMs: number; kind?: "comment" | "ping" };
  /**
   * After N events, send a protocol error event and end the stream: Anthropic
   * `event: error` with `{"type":"error","error":{"type":"overloaded_error",...}}`, OpenAI a
   * `data: {"error":{...}}` line. 0 is before any content (P6), later is mid-stream (P7).
   */
  errorEvent?: StreamPosition | ({ after: StreamPosition } & MockErrorSpec);
  /** After N events, send a `data:` line of invalid JSON (or `data`, as is), then go on with the stream (P11). */
  malformed?: StreamPosition | { after: StreamPosition; data?: string };
  /**
   * Write the stream in pieces of at most this many bytes, each its own write, so events are
   * split across chunks and multi-byte UTF-8 characters across pieces (P11). 1 splits every byte.
   */
  chunkBytes?: number;
  /** End SSE lines with CRLF instead of LF (P11). */
  crlf?: boolean;
  /**
   * Never finish: once the last block's content is sent, keep adding to it, one event every
   * `trickleMs` (a space of tool input JSON, or a "." of text or thinking), until the client
   * gives up or the server closes. Each is a real stream event, so an idle watchdog never fires:
   * only a total deadline ends the call. Needs `text`, `thinking` or `toolCalls`.
   */
  trickleMs?: number;
}

/** What a script function is given for each request. */
export interface MockScriptRequest {
  protocol: MockProtocol;
  /** The parsed request body. */
  body: any;
  headers: Record<string, string>;
  /** The turn asked for: the number of assistant messages in the request's `messages`. */
  index: number;
  /** 1 for the first request for this turn, 2 for its first retry, and so on. */
  attempt: number;
}

/**
 * An array of turns, the turn chosen by the number of assistant messages in the request (so the
 * server is stateless about the conversation, and a retried request gets the same turn); or a
 * function of the request. A request past the end of an array gets a 500 that says so.
 */
export type MockScript =
  | readonly MockTurn[]
  | ((request: MockScriptRequest) => MockTurn | Promise<MockTurn>);

export interface MockServerOptions {
  script: MockScript;
  /**
   * Answer 400, as the real API would, to a request it refuses (see `MockTurn`). Default true;
   * false plays the script whatever the request holds.
   */
  validate?: boolean | undefined;
  /** The model ids `GET /v1/models` lists. Default `["mock-model"]`. */
  models?: readonly string[] | undefined;
}

/** One request the server received, in arrival order. */
export interface MockRequest {
  protocol: MockProtocol;
  method: string;
  /** The path with its query string, such as `/v1/messages`. */
  path: string;
  /** Lower-case names; repeated headers joined with ", ". */
  headers: Record<string, string>;
  /** The parsed JSON body; the raw text when it is not JSON; undefined when there is none. */
  body: any;
  /** The turn index it asked for (model calls only). */
  turn?: number;
  /** Which attempt at that turn it was, from 1 (model calls only). */
  attempt?: number;
}

export interface MockServer {
  /** `http://127.0.0.1:<port>`: the Anthropic base URL. The OpenAI base URL is `url + "/v1"`. */
  readonly url: string;
  readonly requests: MockRequest[];
  /** Stops the server and ends every open connection, hanging and stalled ones included. */
  close(): Promise<void>;
}
