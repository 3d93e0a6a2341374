import { createBareAgent, tool } from "skein";
import { scriptedModel } from "skein/testing";
import { z } from "zod";

const deploy = tool(
  "deploy",
  "Deploy a service to an environment",
  z.object({ service: z.string(), env: z.enum(["staging", "production"]) }),
  async ({ service, env }) => `Deployed ${service} to ${env}.`,
);

const model = scriptedModel([
  {
    toolCalls: [
      { name: "deploy", input: { service: "api", env: "staging" } },
      { name: "deploy", input: { service: "web", env: "production" } },
    ],
  },
  { text: "api is on staging; production needs a human." },
]);

const agent = createBareAgent({
  model,
  tools: [deploy],
  // Sees every call of a reply before any runs; a refusal answers each call with its message.
  toolBatchPolicy: {
    validate: ({ toolCalls }) =>
      toolCalls.length <= 5
        ? { allowed: true }
        : { allowed: false, code: "too_many", message: "At most 5 deploys a reply." },
  },
  hooks: {
    // Return { block: true, reason } to stop the call, or { input } to replace its input.
    beforeToolCall: ({ input }) =>
      (input as { env: string }).env === "production"
        ? { block: true, reason: "Production deploys need a human." }
        : undefined,
    // Return { result } to replace the result, or { stop: true } to end the run after the batch.
    afterToolCall: ({ result }) => ({ result: `${result.content} (logged)` }),
    // Observes every call's final result, in call order; a throw becomes a hook_error event.
    onToolResult: ({ name, input, result, isError }) =>
      console.log(name, JSON.stringify(input), isError ? "refused:" : "->", result.content),
  },
});

const result = await agent.run("Deploy api to staging and web to production.");
console.log(result.subtype, result.result);
