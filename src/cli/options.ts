// The options several commands of the skein command share, and the checks of their values.

import { InvalidArgumentError, Option } from "commander";
import { API_NAMES, PROVIDER_NAMES } from "./provider.ts";

/** A repeatable option's values, in order. */
export const collect = (value: string, previous: string[] | undefined) => [
  ...(previous ?? []),
  value,
];

export function apiOption(): Option {
  return new Option(
    "--api <api>",
    "OpenAI's API: responses or chat (default: responses for OpenAI's own host, chat for any other --base-url)",
  ).choices(API_NAMES);
}

export function providerOption(): Option {
  return new Option(
    "--provider <name>",
    "the API protocol (default: openai for --model gpt-*, o1*, o3*, o4* or openai:<id>, google for gemini-* or google:<id>, else anthropic)",
  ).choices(PROVIDER_NAMES);
}

export function parseURL(value: string): string {
  try {
    new URL(value);
    return value;
  } catch {
    throw new InvalidArgumentError("it must be an absolute URL, such as http://localhost:8080.");
  }
}

export function parseConcurrency(value: string): number {
  const runs = Number(value);
  if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(runs) || runs < 1) {
    throw new InvalidArgumentError("it must be a whole number of runs, 1 or more.");
  }
  return runs;
}

export function parsePort(value: string): number {
  const port = Number(value);
  if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(port) || port < 1 || port > 65535) {
    throw new InvalidArgumentError("it must be a port number from 1 to 65535.");
  }
  return port;
}

export function parseTurns(value: string): number {
  const turns = Number(value);
  if (!Number.isInteger(turns) || turns < 1) {
    throw new InvalidArgumentError("it must be a whole number of turns, 1 or more.");
  }
  return turns;
}

// What the agent is given beyond its built-ins, the same for `skein` and `skein dev` (which
// resumes the runs `skein` paused, so it needs the same tools): --skills, --user-skills, --agents.

export const skillsOption = () =>
  new Option("--skills <dir>", "load the skills in this folder (repeatable)").argParser(collect);

export const userSkillsOption = () =>
  new Option("--user-skills", "load the skills in ~/.skein/skills too");

export const agentsOption = () =>
  new Option(
    "--agents <dir>",
    "give the agent the agent files (*.md) in this folder as tools (repeatable)",
  ).argParser(collect);
