/**
 * `npm run docs`: the HTML API reference, built by TypeDoc from the sources' doc comments into
 * docs/api/ (git-ignored). The entry points are the package's public entries, read from
 * tsconfig.json's `paths` ("skein", "skein/testing", ...). Every `@example` is type-checked first:
 * one that does not compile, or that has no ```ts block to check, fails the build. So does a page
 * that names the project's internal notes (seeds, DESIGN, RELIABILITY cases, design/*.md), which a
 * reader of the reference cannot follow.
 */
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { checkExamples, examplesUnder } from "./doc-examples.ts";

const root = fileURLToPath(new URL("..", import.meta.url));
const OUT = "docs/api";

const { examples, problems } = examplesUnder(root, "src");
if (examples.length === 0) problems.push("no @example found under src/: the extraction is broken");
problems.push(...checkExamples(root, examples));
if (problems.length > 0) {
  console.error(problems.join("\n"));
  console.error(`\n${problems.length} problem(s) in the doc comments' @example blocks.`);
  process.exit(1);
}
console.log(`${examples.length} @example blocks compile.`);

const tsconfig = JSON.parse(readFileSync(path.join(root, "tsconfig.json"), "utf8"));
const paths: Record<string, string[]> = tsconfig.compilerOptions.paths;
const entryPoints = Object.entries(paths)
  .filter(([name]) => name === "skein" || name.startsWith("skein/"))
  .map(([, [file]]) => file!);

const manifest = createRequire(import.meta.url).resolve("typedoc/package.json");
const typedoc = path.join(
  path.dirname(manifest),
  JSON.parse(readFileSync(manifest, "utf8")).bin.typedoc as string,
);
const run = spawnSync(
  process.execPath,
  [
    typedoc,
    ...entryPoints.flatMap((file) => ["--entryPoints", file]),
    ["--tsconfig", "tsconfig.build.json"],
    ["--out", OUT],
    ["--name", "skein"],
    // The guides are Markdown pages of their own; the reference is the API only.
    ["--readme", "none"],
    "--disableSources",
    ["--excludePrivate", "--excludeInternal"],
  ].flat(),
  { cwd: root, stdio: "inherit" },
);
if (run.status !== 0) process.exit(run.status ?? 1);

const INTERNAL = /\bseeds? \d|\bDESIGN\b|\bRELIABILITY\b|\bdesign\/\w+\.md/;
const named = readdirSync(path.join(root, OUT), { recursive: true, encoding: "utf8" })
  .filter((file) => file.endsWith(".html"))
  .flatMap((file) => {
    const text = readFileSync(path.join(root, OUT, file), "utf8").replace(/<[^>]*>/g, "");
    const found = INTERNAL.exec(text);
    return found ? [`${OUT}/${file}: "${text.slice(found.index - 40, found.index + 40)}"`] : [];
  });
if (named.length > 0) {
  console.error(`Doc comments name internal notes a reader cannot follow:\n${named.join("\n")}`);
  process.exit(1);
}
console.log(`The API reference is in ${OUT}/index.html.`);
