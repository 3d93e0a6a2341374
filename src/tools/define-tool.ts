import type { StandardSchemaV1 } from "@standard-schema/spec";
import { ConfigurationError, describeThrown, messageForModel } from "../core/errors.ts";
import {
  assertFunction,
  assertKnownOptions,
  DEFINE_TOOL_KEYS,
  describeValue,
} from "../core/options.ts";
import { createToolDefinition } from "./definition.ts";
import { InvalidToolResultError, toolResultFromData } from "./result.ts";
import {
  ANY_OBJECT_SCHEMA,
  compileJsonSchema,
  compileStandardSchema,
  isStandardSchema,
  type JsonSchema,
  type ValidationOutcome,
} from "./schema.ts";
import type { ToolContext, ToolDefinition, ToolOptions } from "./types.ts";

/**
 * A validator: a Standard Schema (Zod included), an object with `safeParse()`
 * or `parse()`, or a function that returns the parsed value (or `true`/`undefined` to keep the
 * input, `false` to reject) and throws to reject.
 */
export type Validator<T> =
  | StandardSchemaV1<unknown, T>
  | { safeParse(value: unknown): { success: boolean; data?: T; error?: unknown } }
  | { parse(value: unknown): T }
  | ((value: unknown) => T | boolean | undefined);

type MaybePromise<T> = T | Promise<T>;

export interface DefineToolOptions<TInput, TOutput> extends ToolOptions<TInput> {
  id: string;
  description?: string | undefined;
  /** JSON Schema for the input; without it (and without a convertible validator), any object. */
  parameters?: JsonSchema | undefined;
  validator?: Validator<TInput> | undefined;
  /** Checks what `execute` returned before it crosses the tool boundary. */
  outputSchema?: Validator<unknown> | undefined;
  /** The tool's work, or `false` when the app runs it (the run pauses for `toolOutputs`). */
  execute:
    | ((
        input: TInput,
        context: ToolContext,
      ) => MaybePromise<TOutput> | AsyncGenerator<unknown, TOutput, any>)
    | false;
  /** Called when the model calls the tool: `null` pauses for the app's response; `undefined` continues; any other value is the output. */
  onToolCalled?: ((input: TInput, context: ToolContext) => unknown) | undefined;
  /** Validates or transforms the app's response on resume; its return is the output. */
  onResponseReceived?: ((response: unknown, input: TInput) => unknown) | undefined;
}

/**
 * Defines a tool from JSON Schema `parameters` and/or a validator.
 *
 * @example
 * ```ts
 * import { defineTool } from "skein";
 *
 * const fetchTicket = defineTool({
 *   id: "fetch_ticket",
 *   description: "Loads one support ticket.",
 *   parameters: {
 *     type: "object",
 *     properties: { ticketId: { type: "string" } },
 *     required: ["ticketId"],
 *   },
 *   timeoutMs: 5_000,
 *   execute: async (input: { ticketId: string }) => ({ id: input.ticketId, status: "open" }),
 * });
 * ```
 */
export function defineTool<TInput = any, TOutput = unknown>(
  options: DefineToolOptions<TInput, TOutput>,
): ToolDefinition<TInput> {
  const owner = typeof options?.id === "string" ? `defineTool("${options.id}")` : "defineTool()";
  if (options === undefined) {
    throw new ConfigurationError(`${owner}: options must be an object, received undefined.`);
  }
  assertKnownOptions(owner, options, DEFINE_TOOL_KEYS);
  if (options.execute !== false && typeof options.execute !== "function") {
    throw new ConfigurationError(
      `${owner}: execute must be a function, or false when the app runs the tool; received ${describeValue(options.execute)}.`,
    );
  }
  assertFunction(owner, "onToolCalled", options.onToolCalled);
  assertFunction(owner, "onResponseReceived", options.onResponseReceived);
  if (
    options.parameters !== undefined &&
    (typeof options.parameters !== "object" || options.parameters === null)
  ) {
    throw new ConfigurationError(
      `${owner}: parameters must be a JSON Schema object, received ${describeValue(options.parameters)}.`,
    );
  }

  const fromParameters = options.parameters
    ? compileJsonSchema(options.parameters, owner)
    : undefined;
  const fromValidator =
    options.validator === undefined
      ? undefined
      : isStandardSchema(options.validator) && !fromParameters
        ? compileStandardSchema(options.validator, owner)
        : {
            jsonSchema: undefined,
            validate: validatorFunction(options.validator, owner, "validator"),
          };
  const checkOutput =
    options.outputSchema === undefined
      ? undefined
      : validatorFunction(options.outputSchema, owner, "outputSchema");
  const inputSchema = fromParameters?.jsonSchema ?? fromValidator?.jsonSchema ?? ANY_OBJECT_SCHEMA;
  const checkAnyObject =
    fromParameters || fromValidator ? undefined : compileJsonSchema(ANY_OBJECT_SCHEMA, owner);

  const validate = (input: unknown): MaybePromise<ValidationOutcome> => {
    const first = (fromParameters ?? checkAnyObject)?.validate(input);
    const then = (outcome: ValidationOutcome | undefined): MaybePromise<ValidationOutcome> => {
      if (outcome && !outcome.ok) return outcome;
      const value = outcome ? outcome.value : input;
      return fromValidator ? fromValidator.validate(value) : { ok: true, value };
    };
    return first instanceof Promise ? first.then(then) : then(first);
  };

  const toResult = async (value: unknown) => {
    if (checkOutput) {
      const outcome = await checkOutput(value);
      if (!outcome.ok) {
        const detail = outcome.issues
          .map((issue) => `${issue.path.join(".") || "(result)"}: ${issue.message}`)
          .join("; ");
        throw new InvalidToolResultError(`its result failed the outputSchema: ${detail}.`);
      }
      value = outcome.value;
    }
    return toolResultFromData(value);
  };

  return createToolDefinition({
    owner,
    name: options.id,
    description: options.description ?? "",
    inputSchema,
    options,
    runtime: {
      validate,
      execute:
        options.execute === false
          ? undefined
          : (options.execute as (input: unknown, context: ToolContext) => unknown),
      toResult,
      onCalled: options.onToolCalled as
        | ((input: unknown, context: ToolContext) => unknown)
        | undefined,
      onResponse: options.onResponseReceived as
        | ((response: unknown, input: unknown) => unknown)
        | undefined,
      timeoutBehavior: options.timeoutBehavior ?? "fail_run",
    },
  });
}

function validatorFunction(
  validator: Validator<unknown>,
  owner: string,
  name: string,
): (value: unknown) => MaybePromise<ValidationOutcome> {
  if (isStandardSchema(validator)) {
    return (value) => {
      const result = validator["~standard"].validate(value);
      const read = (r: StandardSchemaV1.Result<unknown>): ValidationOutcome =>
        r.issues
          ? {
              ok: false,
              issues: r.issues.map((issue) => ({
                path: (issue.path ?? []).map((s) =>
                  typeof s === "object" ? (s.key as string | number) : (s as string | number),
                ),
                message: issue.message,
              })),
            }
          : { ok: true, value: r.value };
      return result instanceof Promise ? result.then(read) : read(result);
    };
  }
  if (
    typeof validator === "object" &&
    validator !== null &&
    typeof (validator as { safeParse?: unknown }).safeParse === "function"
  ) {
    const target = validator as {
      safeParse(value: unknown): { success: boolean; data?: unknown; error?: unknown };
    };
    return (value) => {
      const result = target.safeParse(value);
      return result.success
        ? { ok: true, value: result.data }
        : { ok: false, issues: [{ path: [], message: describeThrown(result.error).message }] };
    };
  }
  if (
    typeof validator === "object" &&
    validator !== null &&
    typeof (validator as { parse?: unknown }).parse === "function"
  ) {
    const target = validator as { parse(value: unknown): unknown };
    return (value) => rejectOnThrow(() => target.parse(value), value);
  }
  if (typeof validator === "function") {
    const check = validator as (value: unknown) => unknown;
    return (value) => rejectOnThrow(() => check(value), value);
  }
  throw new ConfigurationError(
    `${owner}: ${name} must be a function, or an object with parse() or safeParse() (such as a Zod schema); received ${describeValue(validator)}.`,
  );
}

function rejectOnThrow(run: () => unknown, value: unknown): MaybePromise<ValidationOutcome> {
  const read = (parsed: unknown): ValidationOutcome => {
    if (parsed === false)
      return { ok: false, issues: [{ path: [], message: "rejected by the tool's validator" }] };
    return { ok: true, value: parsed === true || parsed === undefined ? value : parsed };
  };
  try {
    const parsed = run();
    if (parsed instanceof Promise) {
      return parsed.then(read, (error: unknown) => ({
        ok: false,
        issues: [{ path: [], message: messageForModel(error) }],
      }));
    }
    return read(parsed);
  } catch (error) {
    return { ok: false, issues: [{ path: [], message: messageForModel(error) }] };
  }
}
