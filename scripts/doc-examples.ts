/**
 * The `@example` blocks of the sources' doc comments, and the check that they compile: each is
 * written out as a module of its own and type-checked by tsc with the project's tsconfig (so
 * `import ... from "skein"` resolves to the sources), and each error is reported at the doc
 * comment's line. `npm run docs` runs it before TypeDoc, so an example that no longer compiles
 * fails the build.
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

export interface DocExample {
  /** The source file, relative to the root. */
  file: string;
  /** 1-based line, in `file`, of the example's first line of code. */
  line: number;
  code: string;
}

export interface Extracted {
  examples: DocExample[];
  /** `@example` tags with no ```ts fence: they could not be checked. */
  problems: string[];
}

const FENCE_OPEN = /^```(ts|typescript)\s*$/;

/** Every ```ts block under an `@example` tag of a `/** ... *\/` comment in `source`. */
export function docExamples(source: string, file: string): Extracted {
  const examples: DocExample[] = [];
  const problems: string[] = [];
  for (const comment of source.matchAll(/\/\*\*[\s\S]*?\*\//g)) {
    const firstLine = source.slice(0, comment.index).split("\n").length;
    const lines = comment[0]
      .replace(/^\/\*\*/, "")
      .replace(/\*\/$/, "")
      .split("\n")
      .map((line) => line.replace(/^\s*\* ?/, ""));
    let inExample = false;
    let fenced = false;
    let exampleLine = 0;
    let open: { line: number; code: string[] } | undefined;
    const endExample = () => {
      if (inExample && !fenced)
        problems.push(`${file}:${exampleLine}: an @example without a \`\`\`ts block`);
      inExample = false;
    };
    lines.forEach((text, index) => {
      const line = firstLine + index;
      if (open) {
        if (/^```\s*$/.test(text)) {
          examples.push({ file, line: open.line, code: `${open.code.join("\n")}\n` });
          open = undefined;
        } else open.code.push(text);
        return;
      }
      if (/^@\w+/.test(text.trim())) {
        endExample();
        if (/^@example\b/.test(text.trim())) {
          inExample = true;
          fenced = false;
          exampleLine = line;
        }
        return;
      }
      if (inExample && FENCE_OPEN.test(text.trim())) {
        fenced = true;
        open = { line: line + 1, code: [] };
      }
    });
    if (open) problems.push(`${file}:${open.line - 1}: an @example's code block is never closed`);
    endExample();
  }
  return { examples, problems };
}

/** The `@example` blocks of every .ts file under `dir` (relative to `root`). */
export function examplesUnder(root: string, dir: string): Extracted {
  const all: Extracted = { examples: [], problems: [] };
  const files = readdirSync(path.join(root, dir), { recursive: true, encoding: "utf8" })
    .filter((name) => name.endsWith(".ts"))
    .toSorted();
  for (const name of files) {
    const file = `${dir}/${name.split(path.sep).join("/")}`;
    const found = docExamples(readFileSync(path.join(root, file), "utf8"), file);
    all.examples.push(...found.examples);
    all.problems.push(...found.problems);
  }
  return all;
}

/**
 * Type-checks `examples` with tsc under `root`'s tsconfig.json, each as a module of its own written
 * into `root/<scratch>` (removed afterwards). Returns tsc's errors, each at its example's line in
 * the source.
 */
export function checkExamples(root: string, examples: DocExample[], scratch = ".doc-examples") {
  const dir = path.join(root, scratch);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  try {
    const names = examples.map((example, index) => {
      const name = `example-${String(index + 1).padStart(3, "0")}.ts`;
      // `export {}` makes each example a module of its own, as a user's file would be.
      writeFileSync(path.join(dir, name), `${example.code}export {};\n`);
      return name;
    });
    writeFileSync(
      path.join(dir, "tsconfig.json"),
      JSON.stringify({ extends: "../tsconfig.json", include: names }),
    );
    const tsc = createRequire(path.join(root, "package.json")).resolve("typescript/bin/tsc");
    const run = spawnSync(process.execPath, [tsc, "-p", dir, "--pretty", "false"], {
      cwd: root,
      encoding: "utf8",
    });
    if (run.status === 0) return [];
    const output = `${run.stdout}${run.stderr}`.trim();
    const errors = output.split("\n").map((line) => {
      const at = /example-(\d+)\.ts\((\d+),(\d+)\): (.*)$/.exec(line);
      if (!at) return line;
      const example = examples[Number(at[1]) - 1]!;
      return `${example.file}:${example.line + Number(at[2]) - 1}:${at[3]}: @example: ${at[4]}`;
    });
    return errors.length > 0 ? errors : [`tsc failed (exit ${run.status})`];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
