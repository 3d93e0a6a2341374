// Markdown files with YAML frontmatter (Claude's SKILL.md and agent files): read with size limits,
// the frontmatter parsed with the `yaml` library, every error a ConfigurationError naming the file
// and the line.

import { closeSync, fstatSync, openSync, readSync } from "node:fs";
import { parseDocument } from "yaml";
import { ConfigurationError } from "../core/errors.ts";

/** A file larger than this is refused unread. */
export const MAX_MARKDOWN_BYTES = 256 * 1024;
/** A frontmatter larger than this is refused. */
export const MAX_FRONTMATTER_BYTES = 16 * 1024;

export interface MarkdownFile {
  /** The frontmatter's keys and values (a plain object; unknown keys kept). */
  data: Record<string, unknown>;
  /** The text after the closing `---`. */
  body: string;
  /** The 1-based line of each top-level key in the file, for errors about its value. */
  lines: Record<string, number>;
}

/** An error about `file`, at `line` when known. */
export function fileError(
  prefix: string,
  file: string,
  line: number | undefined,
  message: string,
): ConfigurationError {
  const where = line !== undefined ? `${file}:${line}` : file;
  return new ConfigurationError(`${prefix}: ${where}: ${message}`);
}

/**
 * Reads `file` (an already opened descriptor's file: no second lookup of the path) and parses its
 * frontmatter. Over 256 KB, a missing or unclosed frontmatter, over 16 KB of frontmatter, YAML
 * errors, duplicate keys or a frontmatter that is not a mapping are errors naming the line.
 */
export function readMarkdownFile(prefix: string, file: string, fd?: number): MarkdownFile {
  const opened = fd ?? openFile(prefix, file);
  let text: string;
  try {
    const size = fstatSync(opened).size;
    if (size > MAX_MARKDOWN_BYTES)
      throw fileError(
        prefix,
        file,
        undefined,
        `the file is ${Math.ceil(size / 1024)} KB, more than the ${MAX_MARKDOWN_BYTES / 1024} KB allowed; keep long material in files beside it, read on demand.`,
      );
    // One byte more than allowed: a file that grew since the fstat is caught too.
    const buffer = Buffer.alloc(MAX_MARKDOWN_BYTES + 1);
    let filled = 0;
    for (;;) {
      const read = readSync(opened, buffer, filled, buffer.length - filled, filled);
      if (read === 0) break;
      filled += read;
      if (filled > MAX_MARKDOWN_BYTES)
        throw fileError(
          prefix,
          file,
          undefined,
          `the file is more than the ${MAX_MARKDOWN_BYTES / 1024} KB allowed.`,
        );
    }
    text = buffer.subarray(0, filled).toString("utf8");
  } finally {
    if (fd === undefined) closeSync(opened);
  }
  return parseMarkdown(prefix, file, text);
}

function openFile(prefix: string, file: string): number {
  try {
    return openSync(file, "r");
  } catch (error) {
    throw fileError(prefix, file, undefined, `cannot be read (${(error as Error).message}).`);
  }
}

/** Splits and parses the frontmatter of `text` (the content of `file`). */
export function parseMarkdown(prefix: string, file: string, text: string): MarkdownFile {
  const source = text.startsWith("\uFEFF") ? text.slice(1) : text;
  const opening = /^---[ \t]*\r?\n/.exec(source);
  if (!opening)
    throw fileError(
      prefix,
      file,
      1,
      'the file must start with a YAML frontmatter: a line "---", then "name: ..." and "description: ...", then a line "---".',
    );
  const start = opening[0].length;
  const rest = source.slice(start);
  const match = /(^|\n)---[ \t]*(\r?\n|$)/.exec(rest);
  if (!match) {
    if (Buffer.byteLength(rest) > MAX_FRONTMATTER_BYTES) throw tooLarge(prefix, file);
    throw fileError(prefix, file, 1, 'the frontmatter is not closed: add a line "---" after it.');
  }
  const yamlText = rest.slice(0, match.index + match[1]!.length);
  if (Buffer.byteLength(yamlText) > MAX_FRONTMATTER_BYTES) throw tooLarge(prefix, file);
  const body = rest.slice(match.index + match[0].length);
  // Line numbers in the file: the YAML starts on line 2.
  const document = parseDocument(yamlText, { uniqueKeys: true, prettyErrors: false });
  const problem = document.errors[0];
  if (problem) {
    const message = problem.message.split("\n")[0]!.replace(/ at line \d+, column \d+.*$/s, "");
    const line = 2 + countNewlines(yamlText, problem.pos[0]);
    const hint = /nested mappings/i.test(message)
      ? ' (a value holding ": " must be quoted: description: "...")'
      : "";
    throw fileError(prefix, file, line, `invalid YAML: ${message}${hint}`);
  }
  let data: unknown;
  try {
    // Aliases are expanded at most this often: a "billion laughs" frontmatter fails, never balloons.
    data = document.toJS({ maxAliasCount: 50 });
  } catch (error) {
    throw fileError(prefix, file, 2, `invalid YAML: ${(error as Error).message}`);
  }
  if (data === null || data === undefined) data = {};
  if (typeof data !== "object" || Array.isArray(data))
    throw fileError(prefix, file, 2, "the frontmatter must be a mapping of keys to values.");
  const lines: Record<string, number> = {};
  const contents = document.contents as { items?: { key?: { range?: number[] } }[] } | null;
  for (const item of contents?.items ?? []) {
    const key = item.key as { value?: unknown; range?: number[] } | undefined;
    if (typeof key?.value === "string" && key.range)
      lines[key.value] = 2 + countNewlines(yamlText, key.range[0]!);
  }
  return { data: data as Record<string, unknown>, body, lines };
}

function tooLarge(prefix: string, file: string): ConfigurationError {
  return fileError(
    prefix,
    file,
    1,
    `the frontmatter is more than ${MAX_FRONTMATTER_BYTES / 1024} KB; keep it to a name, a description and a few settings.`,
  );
}

function countNewlines(text: string, end: number): number {
  let count = 0;
  for (let i = 0; i < end; i++) if (text.charCodeAt(i) === 10) count++;
  return count;
}
