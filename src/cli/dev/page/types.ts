// What the inspector's API answers (src/cli/dev/timeline.ts and server.ts), as the page reads it.

export interface Usage {
  inputTokens: number;
  outputTokens: number;
  cacheReadInputTokens: number;
  cacheCreationInputTokens: number;
}

export interface SessionRow {
  sessionId: string;
  createdAt: number;
  updatedAt: number;
  status: string;
  prompt?: string;
  runs?: number;
  error?: string;
}

export interface CallView {
  id: string;
  name: string;
  input: unknown;
  status: string;
  result?: string;
  durationMs?: number;
  waiting?: { reason: string; approvalReason?: string };
  children?: CallView[];
  files?: string[];
}

export interface TurnView {
  seq: number;
  text: string;
  thinking: string;
  usage: Usage;
  stopReason: string;
  partial?: boolean;
  durationMs?: number;
  calls: CallView[];
  userMessages: string[];
}

export interface PendingCall {
  id: string;
  name: string;
  input: unknown;
  reason: string;
  approvalReason?: string;
  parentCallId?: string;
}

export interface RunView {
  runId: string;
  checkpointId: string;
  prompt: string;
  status: string;
  turns: TurnView[];
  usage: Usage;
  result?: string;
  error?: { name?: string; message?: string };
  pending?: PendingCall[];
  files: string[];
}

export interface Timeline {
  sessionId: string;
  status: string;
  lastSeq: number;
  origin?: { from: string; checkpointId?: string };
  runs: RunView[];
  live: boolean;
  error?: string;
}

export interface RewindPreview {
  checkpointId: string;
  files: { path: string; change: string; diff: string }[];
}

export type LiveEvent =
  | { type: "text"; text: string }
  | { type: "tool_start"; callId: string; name: string; parentCallId?: string }
  | { type: "tool_end"; callId: string; name: string; isError: boolean; durationMs: number }
  | { type: "end"; subtype: string }
  | { type: "error"; message: string };
