/**
 * skein in the browser: a run as the AI SDK's UI message stream (`useChat`) or as AG-UI events,
 * and web-standard handlers that put an agent behind a page, approvals answered from it and
 * dropped streams resumed. No browser code: `Request` in, `Response` out.
 * @module skein/web
 */
export type { AgUiEvent, AgUiEventsOptions } from "./ag-ui.ts";
export { agUiHandler, toAgUiEvents } from "./ag-ui.ts";
export type { ChatHandlerOptions, WebHandler } from "./chat-handler.ts";
export { chatHandler } from "./chat-handler.ts";
export type { Authorize } from "./http.ts";
export { toNodeHandler } from "./node.ts";
export { toUIMessageStreamResponse } from "./sse.ts";
export type { UIMessageChunk, UIMessageStreamOptions } from "./ui-stream.ts";
export { toUIMessageStream } from "./ui-stream.ts";
