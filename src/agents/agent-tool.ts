// agentTool() and delegateTool(): agents behind ordinary tools (seeds 000/001, design/agents.md).

import { ConfigurationError } from "../core/errors.ts";
import {
  assertFunction,
  assertKnownOptions,
  assertPositiveInteger,
  describeValue,
} from "../core/options.ts";
import { type AgentRuntime, asAgentTool } from "../run/link.ts";
import type { SDKResultMessage } from "../run/types.ts";
import { createToolDefinition } from "../tools/definition.ts";
import { toolResultFromReturn } from "../tools/result.ts";
import type { JsonSchema, ValidationIssue, ValidationOutcome } from "../tools/schema.ts";
import type { ToolDefinition, ToolHandlerReturn, ToolSecurity } from "../tools/types.ts";
import type { Agent, AgentDefinition } from "./agent.ts";
import { createAgent, createBareAgent } from "./assemble.ts";
import { type ChildSpec, restoreChild, runChild } from "./child.ts";
import { type FileAgentDefinition, fileAgentOf } from "./file-agent.ts";
import { isMailbox, type Mailbox } from "./mailbox.ts";
import { type AgentHandle, handleOf } from "./registry.ts";

export interface AgentToolOptions {
  /** The tool's name; default the agent's `id` (one of the two is required). */
  name?: string | undefined;
  /** What the model reads to decide when to call the agent. Required (but for an agent from `loadAgents`). */
  description: string;
  /** Host-owned annotation, passed through to the definition; never read, never sent to any model. */
  metadata?: Record<string, unknown> | undefined;
  /** Model calls the child may make per call (also bounded by its own and the parent's turns left). */
  maxTurns?: number | undefined;
  /** What the parent's model reads from the child's result; default its final text. */
  toModelOutput?:
    | ((result: SDKResultMessage) => ToolHandlerReturn | Promise<ToolHandlerReturn>)
    | undefined;
  label?: string | undefined;
  security?: ToolSecurity | undefined;
  timeoutMs?: number | undefined;
  /** True when two calls of this agent may run at the same time (default: one at a time). */
  isConcurrencySafe?: ((input: { prompt: string }) => boolean) | undefined;
}

export interface DelegateToolOptions {
  /** Default `"delegate"`. */
  name?: string | undefined;
  /** Default: generated from the target names. */
  description?: string | undefined;
  /** Where `mode: "handoff"` posts tasks; without one, only `mode: "call"` exists. */
  mailbox?: Mailbox | undefined;
  metadata?: Record<string, unknown> | undefined;
  maxTurns?: number | undefined;
  label?: string | undefined;
  security?: ToolSecurity | undefined;
  timeoutMs?: number | undefined;
}

export interface DelegateInput {
  agent: string;
  prompt: string;
  mode?: "call" | "handoff";
}

const AGENT_TOOL_KEYS: ReadonlySet<string> = new Set([
  "name",
  "description",
  "metadata",
  "maxTurns",
  "toModelOutput",
  "label",
  "security",
  "timeoutMs",
  "isConcurrencySafe",
]);

const DELEGATE_TOOL_KEYS: ReadonlySet<string> = new Set([
  "name",
  "description",
  "mailbox",
  "metadata",
  "maxTurns",
  "label",
  "security",
  "timeoutMs",
]);

const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/**
 * An agent as a tool: each call runs the agent in a fresh transcript whose first message is the
 * call's `prompt`; its final text (or `toModelOutput`'s) is the result. A definition is assembled
 * like `createBareAgent` (its own tools only); pass `createAgent(definition)` for the built-ins.
 * One from `loadAgents` has the built-ins (narrowed by its file's `tools`) and its file's name and
 * description.
 */
export function agentTool(
  agent: FileAgentDefinition,
  options?: Partial<AgentToolOptions>,
): ToolDefinition<{ prompt: string }>;
export function agentTool(
  agent: Agent | AgentDefinition,
  options: AgentToolOptions,
): ToolDefinition<{ prompt: string }>;
export function agentTool(
  agent: Agent | AgentDefinition,
  options?: Partial<AgentToolOptions>,
): ToolDefinition<{ prompt: string }> {
  const fromFile = fileAgentOf(agent);
  const given = (
    fromFile && (options === undefined || (typeof options === "object" && options !== null))
      ? { ...options, description: options?.description ?? fromFile.description }
      : options
  ) as Partial<AgentToolOptions> | undefined;
  const named = typeof given?.name === "string" ? given.name : undefined;
  const agentId =
    typeof (agent as { id?: unknown } | null)?.id === "string"
      ? (agent as { id: string }).id
      : undefined;
  const name = named ?? agentId;
  const prefix = name !== undefined ? `agentTool(${JSON.stringify(name)})` : "agentTool()";
  if (given === undefined || typeof given !== "object" || given === null || Array.isArray(given))
    throw new ConfigurationError(
      `${prefix}: options are required: { description } at least, received ${describeValue(given)}.`,
    );
  assertKnownOptions(prefix, given, AGENT_TOOL_KEYS);
  const handle = handleFrom(agent, prefix);
  if (name === undefined)
    throw new ConfigurationError(
      `${prefix}: the tool needs a name: give options.name, or the agent an id.`,
    );
  checkDescription(prefix, given.description);
  assertPositiveInteger(prefix, "maxTurns", given.maxTurns);
  assertFunction(prefix, "toModelOutput", given.toModelOutput);
  const spec: ChildSpec = { handle, agent: name };
  if (given.maxTurns !== undefined) spec.maxTurns = given.maxTurns;
  if (given.toModelOutput) spec.toModelOutput = given.toModelOutput;
  const runtime: AgentRuntime = {
    targets: new Map([[name, { config: handle.config, root: handle.workspace.root }]]),
    invoke: (record, parent, signal, resume) =>
      runChild(spec, record, (record.input as { prompt: string }).prompt, parent, signal, resume),
    restore: (call, parent, answers) => restoreChild(spec, call, parent, answers),
  };
  return asAgentTool(
    createToolDefinition({
      owner: prefix,
      name,
      description: given.description,
      inputSchema: {
        type: "object",
        properties: {
          prompt: {
            type: "string",
            description: `The task for ${name}, complete in itself: it sees nothing of this conversation.`,
          },
        },
        required: ["prompt"],
        additionalProperties: false,
      },
      options: toolOptions(given),
      runtime: {
        validate: (input) => checkInput(input, { prompt: "string" }),
        toResult: toolResultFromReturn,
        timeoutBehavior: "error_result",
      },
    }),
    runtime,
  ) as ToolDefinition<{ prompt: string }>;
}

/**
 * One tool for several agents: the model names the target (`agent`), the task (`prompt`), and,
 * with a `mailbox`, whether to wait for the answer (`mode: "call"`, the default) or hand the task
 * off (`mode: "handoff"`: posted to the mailbox, and the run goes on at once).
 */
export function delegateTool(
  agents: Record<string, Agent | AgentDefinition>,
  options?: DelegateToolOptions,
): ToolDefinition<DelegateInput> {
  const given = (options ?? {}) as Partial<DelegateToolOptions>;
  const name = typeof given.name === "string" ? given.name : "delegate";
  const prefix = `delegateTool(${JSON.stringify(name)})`;
  assertKnownOptions(prefix, options, DELEGATE_TOOL_KEYS);
  if (typeof agents !== "object" || agents === null || Array.isArray(agents))
    throw new ConfigurationError(
      `${prefix}: the first argument must map names to agents, such as { researcher, writer }, received ${describeValue(agents)}.`,
    );
  const keys = Object.keys(agents);
  if (keys.length === 0)
    throw new ConfigurationError(`${prefix}: the target map is empty; give at least one agent.`);
  const bad = keys.find((key) => !TOOL_NAME.test(key));
  if (bad !== undefined)
    throw new ConfigurationError(
      `${prefix}: the target name ${JSON.stringify(bad)} must be 1-64 letters, digits, "_" or "-" (the model writes it).`,
    );
  const specs = new Map<string, ChildSpec>();
  for (const key of keys) {
    const spec: ChildSpec = {
      handle: handleFrom(agents[key], `${prefix}: agents.${key}`),
      agent: key,
    };
    if (given.maxTurns !== undefined) spec.maxTurns = given.maxTurns;
    specs.set(key, spec);
  }
  if (given.description !== undefined) checkDescription(prefix, given.description);
  assertPositiveInteger(prefix, "maxTurns", given.maxTurns);
  for (const spec of specs.values())
    if (given.maxTurns !== undefined) spec.maxTurns = given.maxTurns;
  if (given.mailbox !== undefined && !isMailbox(given.mailbox))
    throw new ConfigurationError(
      `${prefix}: mailbox must have post, claim and ack methods (createMailbox() makes one), received ${describeValue(given.mailbox)}.`,
    );
  const mailbox = given.mailbox;
  const modes = mailbox ? ["call", "handoff"] : ["call"];
  const description =
    given.description ??
    `Gives a task to another agent: ${keys.join(", ")}. The agent sees only the prompt you write.${mailbox ? ' With mode "handoff" the task is queued for the agent and you go on at once; with "call" (the default) you wait for its answer.' : ""}`;
  const spec = (input: unknown) => specs.get((input as DelegateInput).agent)!;
  const runtime: AgentRuntime = {
    targets: new Map(
      [...specs].map(([key, target]) => [
        key,
        { config: target.handle.config, root: target.handle.workspace.root },
      ]),
    ),
    async invoke(record, parent, signal, resume) {
      const input = record.input as DelegateInput;
      if (input.mode === "handoff" && mailbox && !resume) {
        const message = await mailbox.post({
          to: input.agent,
          prompt: input.prompt,
          from: { sessionId: parent.env.sessionId, callId: record.id },
          restrictions: parent.env.config.restrictions,
        });
        return {
          kind: "value",
          value: {
            content: `Handed off to "${input.agent}" (message ${message.id}). It runs on its own; its answer does not come back in this conversation.`,
            details: { agent: input.agent, mode: "handoff", messageId: message.id },
          },
        };
      }
      return runChild(spec(input), record, input.prompt, parent, signal, resume);
    },
    restore: (call, parent, answers) => restoreChild(spec(call.input), call, parent, answers),
  };
  const properties: JsonSchema = {
    agent: { type: "string", enum: keys, description: "Which agent gets the task." },
    prompt: {
      type: "string",
      description: "The task, complete in itself: the agent sees nothing of this conversation.",
    },
    mode: {
      type: "string",
      enum: modes,
      description: mailbox
        ? '"call" (default): wait for the answer. "handoff": queue the task and go on.'
        : '"call": wait for the answer.',
    },
  };
  return asAgentTool(
    createToolDefinition({
      owner: prefix,
      name,
      description,
      inputSchema: {
        type: "object",
        properties,
        required: ["agent", "prompt"],
        additionalProperties: false,
      },
      options: toolOptions(given),
      runtime: {
        validate: (input) =>
          checkInput(input, { agent: keys, prompt: "string", mode: modes }, ["agent", "prompt"]),
        toResult: toolResultFromReturn,
        timeoutBehavior: "error_result",
      },
    }),
    runtime,
  ) as ToolDefinition<DelegateInput>;
}

/** The handle of an agent, or of a definition assembled now (its own options checked strictly). */
function handleFrom(value: unknown, prefix: string): AgentHandle {
  const known = handleOf(value);
  if (known) return known;
  const looksLikeAgent =
    typeof value === "object" &&
    value !== null &&
    typeof (value as { run?: unknown }).run === "function";
  if (typeof value !== "object" || value === null || Array.isArray(value) || looksLikeAgent)
    throw new ConfigurationError(
      `${prefix}: expected an agent made by createAgent()/createBareAgent(), or agent options (defineAgent()), received ${looksLikeAgent ? "an object that skein did not make" : describeValue(value)}.`,
    );
  try {
    // An agent file without `tools` has every built-in tool: it is assembled with them.
    const make = fileAgentOf(value) ? createAgent : createBareAgent;
    return handleOf(make(value as AgentDefinition))!;
  } catch (error) {
    if (error instanceof ConfigurationError)
      throw new ConfigurationError(`${prefix}: ${error.message}`);
    throw error;
  }
}

function checkDescription(prefix: string, description: unknown): asserts description is string {
  if (typeof description !== "string" || description.trim() === "")
    throw new ConfigurationError(
      `${prefix}: description is required: a non-empty string telling the model what the agent does, received ${describeValue(description)}.`,
    );
}

/** The tool options that make sense for a whole agent, passed to the one place tools are built. */
function toolOptions(given: Partial<AgentToolOptions & DelegateToolOptions>) {
  const options: Record<string, unknown> = {};
  for (const key of ["label", "metadata", "security", "timeoutMs", "isConcurrencySafe"] as const)
    if (given[key] !== undefined) options[key] = given[key];
  return options;
}

/** The input of an agent tool: exactly these keys, strings or one of the listed values. */
function checkInput(
  input: unknown,
  shape: Record<string, "string" | readonly string[]>,
  required: readonly string[] = Object.keys(shape),
): ValidationOutcome {
  const issues: ValidationIssue[] = [];
  const value = input as Record<string, unknown>;
  for (const key of required)
    if (!Object.hasOwn(value, key)) issues.push({ path: [key], message: "Required" });
  for (const [key, given] of Object.entries(value)) {
    const expected = shape[key];
    if (expected === undefined) issues.push({ path: [key], message: `Unknown field "${key}"` });
    else if (typeof given !== "string")
      issues.push({ path: [key], message: `Expected a string, received ${describeValue(given)}` });
    else if (expected !== "string" && !expected.includes(given))
      issues.push({
        path: [key],
        message: `Expected one of ${expected.map((option) => JSON.stringify(option)).join(", ")}, received ${JSON.stringify(given)}`,
      });
  }
  return issues.length > 0 ? { ok: false, issues } : { ok: true, value: input };
}
