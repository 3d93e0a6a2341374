import { existsSync } from "node:fs";
import { createAgent } from "skein";
import { scriptedModel } from "skein/testing";

const write = { name: "Write", input: { file_path: "notes.md", content: "# Release notes\n" } };
const model = scriptedModel([
  { toolCalls: [write] },
  { text: "Plan: write notes.md with a heading." },
  { toolCalls: [write] },
  { text: "Wrote notes.md." },
]);

// Planning: only calls that change nothing run; the Write is answered "the agent is planning".
const agent = createAgent({ model, permissionMode: "plan" });
const plan = await agent.run("Plan the release notes.");
console.log(plan.result, existsSync("notes.md"));

// The plan is approved: this run accepts edits inside the workspace without asking.
const done = await agent.run("Go ahead.", { permissionMode: "acceptEdits" });
console.log(done.result, existsSync("notes.md"));
