/**
 * `npm run build`: dist/ as the package ships it.
 *
 * - The JavaScript is one bundle per entry of package.json ("exports" and "bin"), made by esbuild,
 *   with the code entries share in chunks under dist/chunks/. Node keeps a module record, its
 *   source and its bindings per file: the hundred-odd files tsc would emit cost about 7.6 MB more
 *   resident memory after `import("skein")` than the same code in a few files.
 * - Every package stays external (`packages: "external"`): the dependencies are installed beside
 *   skein, and those skein loads only when needed (ajv, diff, tinyglobby, @vscode/ripgrep, ignore,
 *   better-sqlite3, pg) are still loaded by their own `import()` or `require` at that time.
 * - The declarations (.d.ts) are emitted by tsc from the sources, file for file (tsconfig.build.json).
 * - No source maps: they would name src/, which the package does not ship.
 * - `skein dev`'s page (src/cli/dev/page/, plain DOM) is bundled for the browser into
 *   dist/cli/dev-page/ (app.js, app.css), which the inspector serves as they are.
 *
 * The build is made in a directory of its own and then takes dist/'s place, so that nothing of an
 * earlier build is left in it (it would be packed) and a process running dist/ meanwhile (a test,
 * a second build) never sees it half written.
 */
import { spawnSync } from "node:child_process";
import { chmodSync, mkdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const root = fileURLToPath(new URL("..", import.meta.url));
const manifest = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8"));
const dist = path.join(root, "dist");
const work = path.join(root, "node_modules", ".cache", "skein-build", String(process.pid));
const out = path.join(work, "dist");

/** "./dist/sessions/sqlite.js" -> "src/sessions/sqlite.ts", for each export and each bin. */
const targets = new Set(Object.values(manifest.bin));
for (const target of Object.values(manifest.exports)) {
  if (typeof target === "object" && target.import) targets.add(target.import);
}
const entryPoints = [...targets].map((file) => {
  const match = /^\.\/dist\/(.+)\.js$/.exec(file);
  if (!match) throw new Error(`build: package.json names ${file}, which is not in ./dist/`);
  return `src/${match[1]}.ts`;
});

rmSync(work, { recursive: true, force: true });
mkdirSync(work, { recursive: true });
try {
  const tsc = spawnSync(
    process.execPath,
    [
      path.join(root, "node_modules/typescript/bin/tsc"),
      "-p",
      "tsconfig.build.json",
      "--outDir",
      out,
    ],
    { cwd: root, stdio: "inherit" },
  );
  if (tsc.status !== 0) throw new Error(`build: tsc exited with ${tsc.status ?? tsc.signal}`);

  await build({
    absWorkingDir: root,
    entryPoints,
    outbase: "src",
    outdir: out,
    bundle: true,
    splitting: true,
    chunkNames: "chunks/[name]-[hash]",
    format: "esm",
    platform: "node",
    target: "node20",
    packages: "external",
    sourcemap: false,
    legalComments: "none",
    logLevel: "warning",
  });

  // `skein dev`'s page: one script and one style sheet for the browser, prebuilt and shipped, so
  // the inspector needs no network and no bundler at run time.
  await build({
    absWorkingDir: root,
    entryPoints: [
      { in: "src/cli/dev/page/main.ts", out: "app" },
      { in: "src/cli/dev/page/style.css", out: "app" },
    ],
    outdir: path.join(out, "cli", "dev-page"),
    bundle: true,
    format: "esm",
    platform: "browser",
    target: "es2022",
    minify: true,
    sourcemap: false,
    legalComments: "none",
    logLevel: "warning",
  });

  // The command is run by its path (npx, a global install links it): keep it executable.
  for (const bin of Object.values(manifest.bin)) chmodSync(path.join(out, bin.slice(7)), 0o755);

  replaceDist();
} finally {
  rmSync(work, { recursive: true, force: true });
}

/** Moves the new build into dist/'s place; another build may be swapping at the same moment. */
function replaceDist() {
  const old = path.join(work, "old");
  for (let attempt = 0; ; attempt++) {
    try {
      renameSync(dist, old);
    } catch (error) {
      if (error.code !== "ENOENT") throw error;
    }
    try {
      renameSync(out, dist);
      return;
    } catch (error) {
      // Another build put its dist/ there between the two renames: move that one aside too.
      if (!["ENOTEMPTY", "EEXIST"].includes(error.code) || attempt >= 10) throw error;
      rmSync(old, { recursive: true, force: true });
    }
  }
}
