import { createAgent } from "skein";

// skills/release-notes/SKILL.md, in Anthropic's format, with a script beside it. Only the folders
// named in `paths` load: a skills folder that merely sits in the workspace is just files.
const agent = createAgent({
  model: "claude-sonnet-4-6",
  skills: { paths: ["skills"] },
  // The skill's script still runs through Bash under the agent's rules: allow it by name.
  permissions: { allow: ["Bash(python3 skills/release-notes/scripts/changes.py)"] },
});
const result = await agent.run("Write the release notes for 1.2.");
console.log(result.subtype, result.result);
