/**
 * Run agents with no network and no key: scriptedModel, mockServer, and the session store
 * conformance cases.
 * @module skein/testing
 */
export type {
  MockErrorSpec,
  MockProtocol,
  MockRequest,
  MockScript,
  MockScriptRequest,
  MockServer,
  MockServerOptions,
  MockTurn,
  StreamPosition,
} from "./mock/types.ts";
export { mockServer } from "./mock-server.ts";
export type { Script, ScriptEntry, ScriptedModel, ScriptedTurn } from "./scripted-model.ts";
export { scriptedModel } from "./scripted-model.ts";
export type {
  OpenSessionStore,
  OpenSessionStoreOptions,
  SessionStoreCase,
  SessionStoreConformanceOptions,
} from "./session-store-conformance.ts";
export { sessionStoreConformance } from "./session-store-conformance.ts";
