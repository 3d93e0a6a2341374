import { ConfigurationError } from "../core/errors.ts";
import {
  assertFunction,
  assertKnownOptions,
  assertOneOf,
  assertPositiveInteger,
  describeValue,
  SECURITY_KEYS,
} from "../core/options.ts";
import type { JsonSchema } from "./schema.ts";
import { type ToolDefinition, type ToolOptions, type ToolRuntime, toolRuntime } from "./types.ts";

/** Provider APIs accept these names only (Anthropic and OpenAI agree). */
const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/**
 * The one place a tool definition is built (DESIGN decision 1): `tool()` and `defineTool()` both
 * end here, so everything after assembly sees one shape.
 */
export function createToolDefinition(spec: {
  owner: string;
  name: unknown;
  description: unknown;
  inputSchema: JsonSchema;
  options: ToolOptions<any>;
  runtime: Omit<ToolRuntime, "isConcurrencySafe" | "resourceKeys" | "prepareArguments">;
}): ToolDefinition {
  const { owner, name, description, options } = spec;
  if (typeof name !== "string" || !TOOL_NAME.test(name)) {
    throw new ConfigurationError(
      `${owner}: the tool name must be 1-64 letters, digits, "_" or "-" (what model APIs accept), received ${describeValue(name)}.`,
    );
  }
  if (typeof description !== "string") {
    throw new ConfigurationError(
      `${owner}: description must be a string, received ${describeValue(description)}.`,
    );
  }
  checkToolOptions(owner, options);
  // Model APIs take tool input as a JSON object, and Anthropic requires `type: "object"` at the top.
  if (spec.inputSchema.type !== "object") {
    throw new ConfigurationError(
      `${owner}: the input schema must describe an object (JSON Schema type "object"), received ${JSON.stringify(spec.inputSchema).slice(0, 80)}. Wrap the value in an object, such as z.object({ value: ... }).`,
    );
  }

  const definition: Record<string | symbol, unknown> = {
    name,
    description,
    inputSchema: spec.inputSchema,
    executionMode: options.executionMode ?? "parallel",
  };
  // Optional keys are absent, not undefined, when not given (seed 000: metadata).
  if (options.label !== undefined) definition.label = options.label;
  if (options.metadata !== undefined) definition.metadata = options.metadata;
  if (options.security !== undefined) definition.security = options.security;
  if (options.timeoutMs !== undefined) definition.timeoutMs = options.timeoutMs;
  if (options.maxResultChars !== undefined) definition.maxResultChars = options.maxResultChars;
  if (options.ruleContent !== undefined) definition.ruleContent = options.ruleContent;
  if (options.idempotent === true) definition.idempotent = true;

  const runtime: ToolRuntime = {
    ...spec.runtime,
    isConcurrencySafe: options.isConcurrencySafe,
    resourceKeys: options.resourceKeys,
    prepareArguments: options.prepareArguments,
  };
  Object.defineProperty(definition, toolRuntime, { value: runtime, enumerable: false });
  return definition as unknown as ToolDefinition;
}

function checkToolOptions(owner: string, options: ToolOptions<any>): void {
  assertFunction(owner, "isConcurrencySafe", options.isConcurrencySafe);
  assertFunction(owner, "resourceKeys", options.resourceKeys);
  assertFunction(owner, "prepareArguments", options.prepareArguments);
  assertFunction(owner, "ruleContent", options.ruleContent);
  assertOneOf(owner, "executionMode", options.executionMode, ["parallel", "sequential"]);
  if (options.idempotent !== undefined && typeof options.idempotent !== "boolean") {
    throw new ConfigurationError(
      `${owner}: idempotent must be true or false, received ${describeValue(options.idempotent)}.`,
    );
  }
  assertOneOf(owner, "timeoutBehavior", options.timeoutBehavior, ["error_result", "fail_run"]);
  assertPositiveInteger(owner, "maxResultChars", options.maxResultChars);
  if (
    options.timeoutMs !== undefined &&
    (typeof options.timeoutMs !== "number" ||
      !(options.timeoutMs > 0) ||
      !Number.isFinite(options.timeoutMs))
  ) {
    throw new ConfigurationError(
      `${owner}: timeoutMs must be a positive number of milliseconds, received ${describeValue(options.timeoutMs)}.`,
    );
  }
  if (options.label !== undefined && typeof options.label !== "string") {
    throw new ConfigurationError(
      `${owner}: label must be a string, received ${describeValue(options.label)}.`,
    );
  }
  if (
    options.metadata !== undefined &&
    (typeof options.metadata !== "object" ||
      options.metadata === null ||
      Array.isArray(options.metadata))
  ) {
    throw new ConfigurationError(
      `${owner}: metadata must be a plain object, received ${describeValue(options.metadata)}.`,
    );
  }
  if (options.security !== undefined) {
    const securityOwner = `${owner}: security`;
    assertKnownOptions(securityOwner, options.security, SECURITY_KEYS);
    if (options.security.network === undefined) {
      throw new ConfigurationError(
        `${securityOwner}: "network" is required ("none", "loopback", "private" or "unrestricted").`,
      );
    }
    assertOneOf(securityOwner, "network", options.security.network, [
      "none",
      "loopback",
      "private",
      "unrestricted",
    ]);
    assertOneOf(securityOwner, "filesystem", options.security.filesystem, [
      "none",
      "workspace",
      "unrestricted",
    ]);
    assertOneOf(securityOwner, "sideEffects", options.security.sideEffects, [
      "none",
      "workspace",
      "external",
    ]);
  }
}

export function runtimeOf(tool: ToolDefinition): ToolRuntime {
  return tool[toolRuntime];
}

export function isToolDefinition(value: unknown): value is ToolDefinition {
  return typeof value === "object" && value !== null && toolRuntime in value;
}
