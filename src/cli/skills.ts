// The `skein` command's --skills, --user-skills and --agents: skill folders and Claude-format
// agent files the user names. Nothing is read from the workspace (a cloned repository's
// .claude/skills, say) unless named; ~/.skein/skills only with --user-skills.

import { existsSync } from "node:fs";
import { homedir } from "node:os";
import path from "node:path";
import { type AgentOptions, agentTool, loadAgents, type ToolDefinition } from "../index.ts";
import { CliError } from "./failure.ts";

export interface SkillFlags {
  skills?: string[];
  userSkills?: boolean;
  agents?: string[];
}

/** The user's own skills folder, read only with --user-skills. */
export function userSkillsDir(): string {
  return path.join(process.env.HOME || homedir(), ".skein", "skills");
}

/** The agent options these flags add: `skills`, and one agent tool per agent file. */
export function skillOptions(
  flags: SkillFlags,
  cwd: string,
): { skills?: AgentOptions["skills"]; tools: ToolDefinition[] } {
  const paths = [...(flags.skills ?? [])].map((dir) => path.resolve(cwd, dir));
  if (flags.userSkills) {
    const own = userSkillsDir();
    if (!existsSync(own))
      throw new CliError(
        `--user-skills reads ${own}, which does not exist: create it with your skill folders in it, or leave out --user-skills.`,
      );
    paths.push(own);
  }
  const tools = (flags.agents ?? []).length
    ? loadAgents(flags.agents!, { cwd }).map((definition) => agentTool(definition))
    : [];
  return { ...(paths.length > 0 ? { skills: { paths } } : {}), tools };
}
