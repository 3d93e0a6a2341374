/**
 * Temporary directories, by their real path (a workspace root is canonical, and a symlinked
 * temp directory must not make paths differ from what the agent reports).
 */
import { mkdtempSync, realpathSync, rmSync } from "node:fs";
import { mkdtemp, realpath, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach } from "vitest";

/** A new empty directory under the OS temp directory. */
export function makeTempDir(prefix = "skein-test-"): string {
  return realpathSync(mkdtempSync(join(tmpdir(), prefix)));
}

/** Removes a directory and everything in it; nothing happens when it is already gone. */
export function removeDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}

/**
 * Temporary directories, each removed after the test that made it. Call it at the top level of
 * a file (or a describe block); it returns the function that makes one.
 */
export function useTempDirs(prefix = "skein-test-"): () => Promise<string> {
  const made: string[] = [];
  afterEach(async () => {
    await Promise.all(made.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
  });
  return async () => {
    const dir = await realpath(await mkdtemp(join(tmpdir(), prefix)));
    made.push(dir);
    return dir;
  };
}

/** One temporary directory for the tests of a file (or describe block), removed after them all. */
export function useTempDir(prefix = "skein-test-"): string {
  const dir = makeTempDir(prefix);
  afterAll(() => removeDir(dir));
  return dir;
}
