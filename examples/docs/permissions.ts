import { createInterface } from "node:readline/promises";
import { createAgent } from "skein";

const terminal = createInterface({ input: process.stdin, output: process.stderr });

const agent = createAgent({
  model: "claude-sonnet-4-6",
  cwd: process.cwd(), // the workspace (this is the default)
  allowedTools: ["Read", "Grep", "Glob", "Edit", "Bash"], // what the model sees; grants nothing
  disallowedTools: ["KillShell"],
  permissions: {
    allow: ["Bash(npm run test:*)", "Edit(src/**)"],
    ask: ["Bash(git push:*)"],
    deny: ["Read(.env)", "Bash(rm *)", "mcp__*"],
  },
  // Calls the rules send to "ask" come here; without a handler, the run pauses instead.
  approval: async (name, input, { reason, signal }) => {
    const question = `${name} ${JSON.stringify(input)} (${reason}) allow? [y/N] `;
    const answer = await terminal.question(question, { signal });
    return answer.trim() === "y" ? true : { behavior: "deny", message: "The user said no." };
  },
});

const result = await agent.run("Run the unit tests, fix what fails, then push.");
console.log(result.result);
terminal.close();
