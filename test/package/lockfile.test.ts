/**
 * A fresh clone's `npm install` leaves the repository as it was: the lock's root entry says what
 * package.json says (a peer missing from the lock made npm rewrite it on every first install).
 * And the package carries its licence, in the repository and in the tarball.
 */
import { execFile } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { ROOT } from "../cli/helpers.ts";

const run = promisify(execFile);
const read = (file: string) => JSON.parse(readFileSync(join(ROOT, file), "utf8"));

/** The fields npm copies from package.json into the lock's root entry. */
const MIRRORED = [
  "name",
  "version",
  "license",
  "dependencies",
  "devDependencies",
  "peerDependencies",
  "peerDependenciesMeta",
  "optionalDependencies",
  "engines",
] as const;

describe("package-lock.json", () => {
  it("its root entry mirrors package.json, field by field", () => {
    const manifest = read("package.json");
    const lock = read("package-lock.json");
    expect(lock.lockfileVersion).toBe(3);
    const root = lock.packages[""];
    for (const field of MIRRORED)
      expect(
        root[field],
        `package-lock.json's "${field}": run npm install and commit the lock`,
      ).toEqual(manifest[field]);
  });

  it("locks every dependency package.json names", () => {
    const manifest = read("package.json");
    const lock = read("package-lock.json");
    const named = [
      ...Object.keys(manifest.dependencies ?? {}),
      ...Object.keys(manifest.devDependencies ?? {}),
    ];
    const missing = named.filter((name) => !lock.packages[`node_modules/${name}`]);
    expect(missing).toEqual([]);
  });
});

describe("the licence", () => {
  it("is in the repository, says what package.json says, and is packed", async () => {
    const manifest = read("package.json");
    expect(manifest.license).toBe("MIT");
    expect(existsSync(join(ROOT, "LICENSE"))).toBe(true);
    expect(readFileSync(join(ROOT, "LICENSE"), "utf8")).toMatch(/^MIT License\n/);
    const { stdout } = await run("npm", ["pack", "--dry-run", "--json", "--ignore-scripts"], {
      cwd: ROOT,
      maxBuffer: 16 * 1024 * 1024,
    });
    const files = (JSON.parse(stdout)[0].files as { path: string }[]).map((file) => file.path);
    expect(files).toContain("LICENSE");
  }, 120_000);
});
