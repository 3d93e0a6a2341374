/**
 * The source of the matcher worker (see `bounded-match.ts`), run with `new Worker(…, { eval: true })`
 * so that it needs no separate file next to the compiled module. It is plain CommonJS that loads
 * tinyglobby and ignore from the paths the main thread resolved. It reports a heartbeat while a
 * task runs: a regular expression that backtracks blocks the worker's event loop, the beats stop,
 * and the main thread terminates the worker.
 *
 * Tasks:
 * - `glob`: tinyglobby's `glob(patterns, options)`, with a cooperative time limit (the crawl stops
 *   and returns what it found) and, with `confine`, a file system that lists no directory outside it.
 * - `ignored`: for each path, whether gitignore `patterns` ignore it.
 * - `gitignore`: for each workspace-relative path, whether the .gitignore files given as
 *   `[directory, text]` pairs ignore it, deeper files overriding shallower ones.
 */
export const WORKER_SOURCE = `
"use strict";
const { parentPort, workerData } = require("node:worker_threads");
const fs = require("node:fs");
const path = require("node:path");
const { glob } = require(workerData.tinyglobby);
const ignore = require(workerData.ignore);

function isInside(base, dir) {
  const relative = path.relative(base, path.resolve(base, dir));
  return relative === "" || (relative !== ".." && !relative.startsWith("../") && !path.isAbsolute(relative));
}

function confinedFs(base) {
  return {
    readdir(dir, options, callback) {
      if (!isInside(base, dir)) return callback(null, []);
      return fs.readdir(dir, options, callback);
    },
    readdirSync(dir, options) {
      return isInside(base, dir) ? fs.readdirSync(dir, options) : [];
    },
  };
}

const tasks = {
  async glob({ patterns, options, confine, timeoutMs }) {
    const signal = AbortSignal.timeout(timeoutMs);
    const paths = await glob(patterns, {
      ...options,
      signal,
      ...(confine ? { fs: confinedFs(confine) } : {}),
    });
    return { paths, stopped: signal.aborted };
  },
  ignored({ patterns, paths, ignorecase }) {
    const rules = ignore({ ignorecase: ignorecase !== false }).add(patterns);
    return paths.map((p) => rules.ignores(p));
  },
  gitignore({ rules, paths }) {
    const byDir = new Map(rules.map(([dir, text]) => [dir, ignore().add(text)]));
    return paths.map((relative) => {
      let ignored = false;
      let at = "";
      const parts = relative.split("/");
      for (let i = 0; i < parts.length; i += 1) {
        const rule = byDir.get(at);
        if (rule !== undefined) {
          const result = rule.test(parts.slice(i).join("/"));
          if (result.ignored) ignored = true;
          else if (result.unignored) ignored = false;
        }
        at = at === "" ? parts[i] : at + "/" + parts[i];
      }
      return ignored;
    });
  },
};

parentPort.on("message", async ({ id, kind, input }) => {
  parentPort.postMessage({ id, beat: true });
  const beat = setInterval(() => parentPort.postMessage({ id, beat: true }), workerData.beatMs);
  try {
    const result = await tasks[kind](input);
    parentPort.postMessage({ id, result });
  } catch (error) {
    parentPort.postMessage({ id, error: String((error && error.message) || error) });
  } finally {
    clearInterval(beat);
  }
});
`;
