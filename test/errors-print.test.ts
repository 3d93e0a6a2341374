/**
 * What a user sees of skein's errors: `console.log(error)` shows the message, the stack and the
 * error's own fields, never the internal brand; and the stack points at files the package ships.
 */
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { inspect, promisify } from "node:util";
import {
  AbortError,
  APIConnectionError,
  ConfigurationError,
  NotFoundError,
  ResumeError,
  RewindError,
  SessionConflictError,
  SessionError,
  SkeinError,
  ToolTimeoutError,
} from "skein";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("..", import.meta.url));

const samples = (): SkeinError[] => [
  new SkeinError("base"),
  new ConfigurationError("AgentOptions: maxTurns must be a positive integer."),
  new AbortError({ messages: [], sessionId: "s-1" }),
  new ToolTimeoutError("Bash", 100),
  new ResumeError("resume: altered"),
  new SessionError("no such session", { code: "not_found", sessionId: "s-1" }),
  new SessionConflictError({ sessionId: "s-1", seq: 3, lastSeq: 1 }),
  new RewindError("refused", { paths: ["a.txt"] }),
  new NotFoundError("404 not_found_error: model: nope", { status: 404 }),
  new APIConnectionError("Could not reach the model API."),
];

describe("printing an error", () => {
  it("shows no internal symbol and no empty cause", () => {
    for (const error of samples()) {
      const printed = inspect(error);
      expect(printed, error.name).toContain(error.message);
      expect(printed, error.name).not.toContain("Symbol(");
      expect(printed, error.name).not.toContain("[cause]: undefined");
    }
  });

  it("still shows the error's own fields and a cause that was given", () => {
    const printed = inspect(
      new SessionError("damaged", { code: "damaged", seq: 4, cause: new Error("bad row") }),
    );
    expect(printed).toContain("code: 'damaged'");
    expect(printed).toContain("seq: 4");
    expect(printed).toContain("[cause]: Error: bad row");
  });

  it("the brand still tells skein's errors apart, also those of another copy of the package", () => {
    for (const error of samples()) expect(SkeinError.isInstance(error), error.name).toBe(true);
    // Another copy of this version: the same registered symbol, on its own class's prototype.
    class OtherCopyError extends Error {
      get [Symbol.for("skein.error")]() {
        return true;
      }
    }
    expect(SkeinError.isInstance(new OtherCopyError("x"))).toBe(true);
    // An older copy kept the brand as an own property.
    expect(
      SkeinError.isInstance(Object.assign(new Error("x"), { [Symbol.for("skein.error")]: true })),
    ).toBe(true);
    expect(SkeinError.isInstance(new Error("x"))).toBe(false);
    expect(SkeinError.isInstance({ message: "x" })).toBe(false);
    expect(SkeinError.isInstance(null)).toBe(false);
  });
});

describe("stack traces point at files the package ships", () => {
  it("the build emits no source maps (they would name src/, which is not shipped)", () => {
    const parsed = ts.getParsedCommandLineOfConfigFile(
      path.join(ROOT, "tsconfig.build.json"),
      {},
      { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => {} },
    );
    expect(parsed?.errors).toEqual([]);
    const options = parsed!.options;
    expect(options.sourceMap ?? false).toBe(false);
    expect(options.inlineSourceMap ?? false).toBe(false);
    expect(options.declarationMap ?? false).toBe(false);
  });

  it("the packed file list holds no map whose sources are missing from it", async () => {
    const manifest = JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8"));
    expect(manifest.files).toContain("!dist/**/*.map"); // maps of an older build stay out too
    const { stdout } = await promisify(execFile)(
      "npm",
      ["pack", "--dry-run", "--json", "--ignore-scripts"],
      { cwd: ROOT, maxBuffer: 16 * 1024 * 1024 },
    );
    const files = new Set<string>(
      JSON.parse(stdout)[0].files.map((file: { path: string }) => file.path),
    );
    for (const file of files) {
      if (!file.endsWith(".map")) continue;
      const map = JSON.parse(readFileSync(path.join(ROOT, file), "utf8"));
      for (const source of map.sources as string[]) {
        const shipped = path.posix.normalize(path.posix.join(path.posix.dirname(file), source));
        expect(files.has(shipped), `${file} names ${source}`).toBe(true);
      }
    }
  }, 120_000);
});
