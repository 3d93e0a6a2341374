// A fresh process: is ajv loaded by import("skein"), by an agent whose tools use Zod, or only by
// the first tool given JSON Schema? Prints one JSON line.
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const ajvLoaded = () => Object.keys(require.cache).some((path) => /[\\/]ajv[\\/]/.test(path));

const skein = await import("../../../src/index.ts");
const { scriptedModel } = await import("../../../src/testing/index.ts");
const { z } = await import("zod");
const afterImport = ajvLoaded();

const echo = skein.tool("echo", "Echo the text.", z.object({ text: z.string() }), async (input) =>
  String(input.text),
);
skein.createBareAgent({ model: skein.anthropic({ apiKey: "unused" }), tools: [echo] });
const afterZodAgent = ajvLoaded();

const lookup = skein.defineTool({
  id: "lookup",
  parameters: { type: "object", properties: { key: { type: "string" } }, required: ["key"] },
  execute: () => "found",
});
const afterJsonSchemaTool = ajvLoaded();

// The JSON Schema tool validates with ajv as before: a call without its required field fails.
const model = scriptedModel([
  { toolCalls: [{ id: "call_1", name: "lookup", input: {} }] },
  { text: "done" },
]);
const result = await skein.createBareAgent({ model, tools: [lookup] }).run("look it up");
const answer = result.steps[0]?.toolCalls[0]?.result;

console.log(JSON.stringify({ afterImport, afterZodAgent, afterJsonSchemaTool, answer }));
