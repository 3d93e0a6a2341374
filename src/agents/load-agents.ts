// loadAgents(): Claude-format agent files (`.claude/agents/*.md`: frontmatter with a name, a
// description, `tools` and `model`, then the system prompt) as agent definitions, ready for
// agentTool, delegateTool and handoffs, narrowed like agents defined in code.

import { readdirSync, statSync } from "node:fs";
import path from "node:path";
import { fileError, readMarkdownFile } from "../builtin/frontmatter.ts";
import { BUILTIN_TOOL_NAMES } from "../builtin/index.ts";
import { ConfigurationError } from "../core/errors.ts";
import { describeValue } from "../core/options.ts";
import { closestName } from "../permissions/rule-names.ts";
import type { AgentOptions } from "../run/agent-options.ts";
import { defineAgent } from "./assemble.ts";
import { FILE_AGENT, type FileAgentDefinition, type FileAgentMark } from "./file-agent.ts";

export interface LoadAgentsOptions {
  /**
   * Where relative paths start, and the `cwd` of every agent loaded (a child agent's cwd must lie
   * inside its parent's workspace: give the parent's). Default: `process.cwd()` for the paths,
   * and no `cwd` in the definitions (the process's directory when they are assembled).
   */
  cwd?: string | undefined;
}

const NAME = /^[a-zA-Z0-9_-]{1,64}$/;
/** Claude's model aliases: they name no model id skein could send. */
const ALIASES = new Set(["sonnet", "opus", "haiku"]);

/**
 * Reads agent files in Claude's format: folders (every `*.md` directly inside, in name order) or
 * files. Each becomes a `defineAgent` definition with the file's name as `id`, its body as
 * `systemPrompt`, its `tools` as `allowedTools` (absent: every built-in tool, never the parent's
 * custom tools) and its `model` (`inherit` or absent: the parent's, in an agent tool).
 * `agentTool(definition)` takes its name and description from the file. Every problem is a
 * `ConfigurationError` naming the file and the line.
 */
export function loadAgents(
  paths: string | string[],
  options: LoadAgentsOptions = {},
): FileAgentDefinition[] {
  const prefix = "loadAgents";
  const list = typeof paths === "string" ? [paths] : paths;
  if (!Array.isArray(list) || list.length === 0)
    throw new ConfigurationError(
      `${prefix}: give a folder of agent files (such as ".claude/agents") or files, received ${describeValue(paths)}.`,
    );
  const cwd = options.cwd;
  if (cwd !== undefined && (typeof cwd !== "string" || cwd === ""))
    throw new ConfigurationError(
      `${prefix}: cwd must be the path of a directory, received ${describeValue(cwd)}.`,
    );
  const base = path.resolve(cwd ?? process.cwd());
  const files: string[] = [];
  list.forEach((entry, index) => {
    if (typeof entry !== "string" || entry === "")
      throw new ConfigurationError(
        `${prefix}: paths[${index}] must be a path, received ${describeValue(entry)}.`,
      );
    files.push(...agentFiles(path.resolve(base, entry), prefix));
  });
  const byName = new Map<string, string>();
  const definitions: FileAgentDefinition[] = [];
  for (const file of [...new Set(files)]) {
    const definition = loadAgentFile(file, prefix, cwd);
    const name = definition.id!;
    const earlier = byName.get(name);
    if (earlier !== undefined)
      throw fileError(
        prefix,
        file,
        undefined,
        `the agent name "${name}" is taken by ${earlier} already; agent names must be unique.`,
      );
    byName.set(name, file);
    definitions.push(definition);
  }
  return definitions;
}

function agentFiles(absolute: string, prefix: string): string[] {
  let isDirectory: boolean;
  try {
    isDirectory = statSync(absolute).isDirectory();
  } catch {
    throw new ConfigurationError(
      `${prefix}: ${absolute} does not exist; name a folder of agent files or a file.`,
    );
  }
  if (!isDirectory) return [absolute];
  const found = readdirSync(absolute)
    .filter((name) => name.endsWith(".md"))
    .sort()
    .map((name) => path.join(absolute, name))
    .filter((file) => statSync(file).isFile());
  if (found.length === 0)
    throw new ConfigurationError(
      `${prefix}: ${absolute} holds no agent file (*.md with a name and a description in its frontmatter).`,
    );
  return found;
}

function loadAgentFile(file: string, prefix: string, cwd: string | undefined): FileAgentDefinition {
  const { data, lines, body } = readMarkdownFile(prefix, file);
  const lineOf = (key: string) => lines[key] ?? 1;
  const { name, description } = data;
  if (typeof name !== "string" || !NAME.test(name))
    throw fileError(
      prefix,
      file,
      lineOf("name"),
      name === undefined
        ? 'the frontmatter has no "name" (such as "name: code-reviewer").'
        : `"name" must be 1-64 letters, digits, "_" or "-" (the model calls it as a tool), received ${describeValue(name)}.`,
    );
  if (typeof description !== "string" || description.trim() === "")
    throw fileError(
      prefix,
      file,
      lineOf("description"),
      description === undefined
        ? 'the frontmatter has no "description": say what the agent does and when to use it.'
        : `"description" must be a non-empty string, received ${describeValue(description)}.`,
    );
  const model = data.model;
  if (model !== undefined && model !== null && (typeof model !== "string" || model === ""))
    throw fileError(
      prefix,
      file,
      lineOf("model"),
      `"model" must be a model id or "inherit", received ${describeValue(model)}.`,
    );
  if (typeof model === "string" && ALIASES.has(model))
    throw fileError(
      prefix,
      file,
      lineOf("model"),
      `"model: ${model}" is an alias skein cannot resolve; write a model id (such as claude-sonnet-4-6) or "inherit" (the parent's model).`,
    );
  const inheritModel = model === undefined || model === null || model === "inherit";
  const mark: FileAgentMark = { file, description: description.trim(), inheritModel };
  const options: AgentOptions & { [FILE_AGENT]: FileAgentMark } = {
    id: name,
    systemPrompt: body.trim(),
    [FILE_AGENT]: mark,
  };
  if (!inheritModel) options.model = model as string;
  if (cwd !== undefined) options.cwd = cwd;
  const tools = toolList(data.tools, "tools", file, prefix, lineOf("tools"));
  if (tools) options.allowedTools = tools;
  const hidden = toolList(
    data.disallowedTools,
    "disallowedTools",
    file,
    prefix,
    lineOf("disallowedTools"),
  );
  if (hidden) options.disallowedTools = hidden;
  try {
    return defineAgent(options) as FileAgentDefinition;
  } catch (error) {
    if (error instanceof ConfigurationError)
      throw fileError(prefix, file, undefined, error.message);
    throw error;
  }
}

/** `tools: Read, Grep` (or a YAML list): built-in tool names only, the closest named when not. */
function toolList(
  value: unknown,
  key: string,
  file: string,
  prefix: string,
  line: number,
): string[] | undefined {
  if (value === undefined || value === null) return undefined;
  const list = typeof value === "string" ? value.split(",") : value;
  if (!Array.isArray(list) || list.some((entry) => typeof entry !== "string"))
    throw fileError(
      prefix,
      file,
      line,
      `"${key}" must be a comma-separated list of tool names (such as "Read, Grep"), received ${describeValue(value)}.`,
    );
  const names = (list as string[]).map((entry) => entry.trim()).filter(Boolean);
  const known: readonly string[] = BUILTIN_TOOL_NAMES;
  for (const name of names) {
    if (known.includes(name)) continue;
    const closest = closestName(name, known);
    throw fileError(
      prefix,
      file,
      line,
      `"${key}" names the tool "${name}", which no agent loaded from a file has${closest ? `; did you mean "${closest}"?` : ""} (the built-in tools are ${known.join(", ")}).`,
    );
  }
  return names;
}
