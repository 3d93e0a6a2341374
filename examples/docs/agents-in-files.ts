import { agentTool, createAgent, loadAgents } from "skein";

// .claude/agents/code-reviewer.md, in Claude's format: a name, a description, `tools: Read, Grep`
// and `model: inherit` in the frontmatter, the system prompt below it.
const reviewers = loadAgents(".claude/agents", { cwd: process.cwd() });
const agent = createAgent({
  model: "claude-sonnet-4-6",
  // Each file becomes an agent tool, named and described by its file.
  tools: reviewers.map((definition) => agentTool(definition)),
});
const result = await agent.run("Review the change in src/answer.ts.");
console.log(result.subtype, result.result);
