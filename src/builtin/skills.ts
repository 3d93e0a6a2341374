// Skills in Anthropic's format: folders holding SKILL.md (YAML frontmatter with a name and a
// description, then instructions) and the files it refers to. Loaded only from the paths the host
// names; the first request lists names and descriptions, the Skill tool gives the rest on demand.

import { closeSync, constants, fstatSync, lstatSync, openSync, readdirSync } from "node:fs";
import { lstat, readdir, realpath } from "node:fs/promises";
import path from "node:path";
import { ConfigurationError } from "../core/errors.ts";
import { assertKnownOptions, describeValue } from "../core/options.ts";
import { closestName } from "../permissions/rule-names.ts";
import { createToolDefinition } from "../tools/definition.ts";
import { toolResultFromReturn } from "../tools/result.ts";
import type { ToolDefinition, ToolResult } from "../tools/types.ts";
import { isWithin } from "../tools/workspace.ts";
import { fileError, readMarkdownFile } from "./frontmatter.ts";
import { canonicalExisting } from "./sandbox.ts";

/** One skill, loaded and checked at assembly. */
export interface Skill {
  name: string;
  /** On one line (whitespace runs collapsed). */
  description: string;
  /** `allowed-tools` as written (kept; it grants nothing). */
  allowedTools?: string[];
  /** Canonical absolute path of the skill's folder. */
  dir: string;
  /** Canonical absolute path of its SKILL.md. */
  file: string;
  /** SKILL.md after the frontmatter. */
  body: string;
}

export const SKILL_TOOL_NAME = "Skill";
const SKILLS_KEYS: ReadonlySet<string> = new Set(["paths"]);
const NAME = /^[a-z0-9-]{1,64}$/;
const MAX_DESCRIPTION = 1024;
/** A Skill result lists at most this many files of the skill's folder. */
const MAX_LISTED_FILES = 200;
/** Directories walked for that list, at most. */
const MAX_WALKED_DIRS = 200;

/**
 * `AgentOptions.skills`: every skill under the named paths (absolute, or relative to `root`, the
 * agent's cwd), sorted by name. Each path is a skill folder (it holds SKILL.md) or a folder of
 * skill folders. Everything wrong is a `ConfigurationError` naming the file and, where it helps,
 * the line.
 */
export function loadSkills(given: unknown, root: string, prefix: string): Skill[] {
  const at = `${prefix}: skills`;
  if (typeof given !== "object" || given === null || Array.isArray(given))
    throw new ConfigurationError(
      `${at} must be { paths: [...] }, folders of skills (each a folder with a SKILL.md), received ${describeValue(given)}.`,
    );
  assertKnownOptions(at, given, SKILLS_KEYS);
  const paths = (given as { paths?: unknown }).paths;
  if (!Array.isArray(paths))
    throw new ConfigurationError(
      `${at}.paths must be an array of folders (absolute, or relative to cwd), received ${describeValue(paths)}.`,
    );
  const skills = new Map<string, Skill>();
  paths.forEach((entry, index) => {
    if (typeof entry !== "string" || entry === "")
      throw new ConfigurationError(
        `${at}.paths[${index}] must be the path of a folder, received ${describeValue(entry)}.`,
      );
    for (const skill of skillsUnder(path.resolve(root, entry), `${at}.paths[${index}]`, prefix)) {
      const earlier = skills.get(skill.name);
      if (earlier && earlier.file === skill.file) continue;
      if (earlier)
        throw fileError(
          prefix,
          skill.file,
          undefined,
          `the skill name "${skill.name}" is taken by ${earlier.file} already; skill names must be unique (rename one, or leave one folder out of skills.paths).`,
        );
      skills.set(skill.name, skill);
    }
  });
  return [...skills.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** The skills one named path holds. */
function skillsUnder(absolute: string, at: string, prefix: string): Skill[] {
  const folder = canonicalExisting(absolute);
  let stats: ReturnType<typeof lstatSync> | undefined;
  try {
    if (folder) stats = lstatSync(folder);
  } catch {}
  if (!folder || !stats)
    throw new ConfigurationError(`${at}: ${absolute} does not exist; name a folder of skills.`);
  // The SKILL.md itself, named directly: its folder.
  if (stats.isFile() && path.basename(folder) === "SKILL.md")
    return [loadSkill(path.dirname(folder), prefix)];
  if (!stats.isDirectory())
    throw new ConfigurationError(
      `${at}: ${absolute} is not a folder; name a skill folder (it holds SKILL.md) or a folder of them.`,
    );
  if (hasEntry(folder, "SKILL.md")) return [loadSkill(folder, prefix)];
  const found: Skill[] = [];
  const names = readdirSync(folder).sort();
  for (const name of names) {
    const child = path.join(folder, name);
    const canonical = canonicalExisting(child);
    if (!canonical || !isDirectoryPath(canonical) || !hasEntry(canonical, "SKILL.md")) continue;
    // A link planted in a folder of skills must not lend the model a folder elsewhere.
    if (!isWithin(folder, canonical))
      throw new ConfigurationError(
        `${at}: ${child} is a symbolic link to a folder outside ${folder}; skills load only from inside the folders named. Name its target in skills.paths if you trust it.`,
      );
    found.push(loadSkill(canonical, prefix));
  }
  if (found.length === 0)
    throw new ConfigurationError(
      `${at}: ${absolute} holds no skill: a skill is a folder with a SKILL.md file; name such a folder, or a folder of them.`,
    );
  return found;
}

function hasEntry(folder: string, name: string): boolean {
  try {
    lstatSync(path.join(folder, name));
    return true;
  } catch {
    return false;
  }
}

function isDirectoryPath(absolute: string): boolean {
  try {
    return lstatSync(absolute).isDirectory();
  } catch {
    return false;
  }
}

/** Reads and checks one skill folder (canonical). */
function loadSkill(dir: string, prefix: string): Skill {
  const named = path.join(dir, "SKILL.md");
  const file = canonicalExisting(named);
  if (!file || !isWithin(dir, file) || path.dirname(file) === file)
    throw fileError(
      prefix,
      named,
      undefined,
      "SKILL.md is a symbolic link leading outside its skill folder (or a dangling one); a skill's files must lie inside its folder.",
    );
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    throw fileError(prefix, named, undefined, `cannot be read (${(error as Error).message}).`);
  }
  let parsed: ReturnType<typeof readMarkdownFile>;
  try {
    if (!fstatSync(fd).isFile())
      throw fileError(prefix, named, undefined, "SKILL.md must be a regular file.");
    parsed = readMarkdownFile(prefix, named, fd);
  } finally {
    closeSync(fd);
  }
  const { data, lines, body } = parsed;
  const lineOf = (key: string) => lines[key] ?? 1;
  const name = data.name;
  if (name === undefined)
    throw fileError(prefix, named, 1, 'the frontmatter has no "name" (such as "name: pdf-forms").');
  if (typeof name !== "string" || !NAME.test(name))
    throw fileError(
      prefix,
      named,
      lineOf("name"),
      `"name" must be 1-64 lowercase letters, digits and hyphens (such as "pdf-forms"), received ${describeValue(name)}.`,
    );
  const description = data.description;
  if (description === undefined)
    throw fileError(
      prefix,
      named,
      1,
      'the frontmatter has no "description": say what the skill does and when to use it.',
    );
  if (typeof description !== "string" || description.trim() === "")
    throw fileError(
      prefix,
      named,
      lineOf("description"),
      `"description" must be a non-empty string, received ${describeValue(description)}.`,
    );
  if (description.length > MAX_DESCRIPTION)
    throw fileError(
      prefix,
      named,
      lineOf("description"),
      `"description" is ${description.length} characters, more than the ${MAX_DESCRIPTION} allowed; it is sent with every request, so keep it short and put the rest in the body.`,
    );
  const skill: Skill = {
    name,
    description: description.trim().replace(/\s+/g, " "),
    dir,
    file,
    body,
  };
  const allowed = data["allowed-tools"];
  if (allowed !== undefined && allowed !== null) {
    const list = typeof allowed === "string" ? allowed.split(/[,\s]+/) : allowed;
    if (!Array.isArray(list) || list.some((entry) => typeof entry !== "string"))
      throw fileError(
        prefix,
        named,
        lineOf("allowed-tools"),
        `"allowed-tools" must be a list of tool names (such as "Read, Grep"), received ${describeValue(allowed)}.`,
      );
    skill.allowedTools = (list as string[]).map((entry) => entry.trim()).filter(Boolean);
  }
  return skill;
}

/** The system prompt's part about skills: one line per skill, in name order. */
export function skillListing(skills: readonly Skill[]): string {
  const lines = skills.map((skill) => `- ${skill.name}: ${skill.description}`);
  return `Skills: when a task matches one of these descriptions, call the ${SKILL_TOOL_NAME} tool with the skill's name first and follow the instructions it returns.\n${lines.join("\n")}`;
}

/**
 * The `Skill` tool: `{ name }` gives that skill's instructions (SKILL.md after its frontmatter)
 * and the absolute paths of the files beside it, which Read reads (read-only, even outside the
 * workspace). Rules may name skills: `Skill(pdf-forms)`.
 */
export function skillTool(skills: readonly Skill[]): ToolDefinition<{ name: string }> {
  const byName = new Map(skills.map((skill) => [skill.name, skill]));
  const names = skills.map((skill) => skill.name);
  return createToolDefinition({
    owner: `tool("${SKILL_TOOL_NAME}")`,
    name: SKILL_TOOL_NAME,
    description:
      "Loads a skill listed in the system prompt: returns its instructions and the paths of the files beside it (read them with Read; run its scripts with Bash).",
    inputSchema: {
      type: "object",
      properties: { name: { type: "string", description: "The skill's name, as listed." } },
      required: ["name"],
      additionalProperties: false,
    },
    options: {
      security: { network: "none", filesystem: "none", sideEffects: "none" },
      isConcurrencySafe: () => true,
      idempotent: true,
      ruleContent: (input: { name: string }) => input.name,
    },
    runtime: {
      validate: (input) => {
        const value = input as Record<string, unknown>;
        const extra = Object.keys(value).find((key) => key !== "name");
        if (extra !== undefined)
          return { ok: false, issues: [{ path: [extra], message: `Unknown field "${extra}"` }] };
        if (typeof value.name !== "string")
          return {
            ok: false,
            issues: [
              {
                path: ["name"],
                message: `Expected a string, received ${describeValue(value.name)}`,
              },
            ],
          };
        return { ok: true, value: input };
      },
      execute: async (input) => {
        const wanted = (input as { name: string }).name;
        const skill = byName.get(wanted);
        if (!skill) {
          const closest = closestName(wanted, names);
          return {
            content: `There is no skill named ${JSON.stringify(wanted.slice(0, 100))}${closest ? `; did you mean "${closest}"?` : "."} The skills are: ${names.join(", ")}.`,
            isError: true,
          } satisfies ToolResult;
        }
        const files = await filesOf(skill.dir, skill.file);
        const listed = files.paths.map((file) => `- ${file}`).join("\n");
        const more = files.more ? "\n(more files in the folder are not listed)" : "";
        const content =
          `${skill.body.trim()}\n\n---\nSkill "${skill.name}" is in ${skill.dir}. ` +
          (files.paths.length > 0
            ? `Paths in the instructions are relative to that folder. Its files (read them with Read; run scripts with Bash):\n${listed}${more}`
            : "Its folder holds no other file.");
        return {
          content,
          details: { skill: skill.name, dir: skill.dir, files: files.paths },
        } satisfies ToolResult;
      },
      toResult: toolResultFromReturn,
      timeoutBehavior: "error_result",
    },
  }) as ToolDefinition<{ name: string }>;
}

/**
 * The files of a skill's folder but SKILL.md, as absolute canonical paths in sorted order. A
 * symbolic link is listed only when it leads to a file inside the folder (Read refuses the rest).
 */
async function filesOf(dir: string, skip: string): Promise<{ paths: string[]; more: boolean }> {
  const paths: string[] = [];
  const queue = [dir];
  let walked = 0;
  let more = false;
  while (queue.length > 0) {
    const current = queue.shift()!;
    if (++walked > MAX_WALKED_DIRS) {
      more = true;
      break;
    }
    let names: string[];
    try {
      names = (await readdir(current)).sort();
    } catch {
      continue;
    }
    for (const name of names) {
      const entry = path.join(current, name);
      let stats: Awaited<ReturnType<typeof lstat>>;
      try {
        stats = await lstat(entry);
      } catch {
        continue;
      }
      if (stats.isDirectory()) {
        queue.push(entry);
        continue;
      }
      let target = entry;
      if (stats.isSymbolicLink()) {
        try {
          target = await realpath(entry);
          if (!isWithin(dir, target) || !(await lstat(target)).isFile()) continue;
        } catch {
          continue;
        }
      } else if (!stats.isFile()) continue;
      if (target === skip) continue;
      if (paths.length >= MAX_LISTED_FILES) {
        more = true;
        break;
      }
      paths.push(entry);
    }
  }
  return { paths, more };
}
