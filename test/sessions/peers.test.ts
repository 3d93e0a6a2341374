// skein/sqlite and skein/postgres without their optional peer: a ConfigurationError with the fix.
import { expect, test } from "vitest";
import { startChild } from "./helpers.ts";

async function attempt(entry: "sqlite" | "postgres", hide: string, how: "missing" | "broken") {
  const child = startChild("missing-peer.ts", { entry, hide, how });
  const exit = await child.exited;
  expect(exit.code, child.stderr).toBe(0);
  expect(child.lines[0]).toBe("imported");
  return JSON.parse(child.lines[1]!);
}

test("sqliteStore() without better-sqlite3 names the install command", async () => {
  expect(await attempt("sqlite", "better-sqlite3", "missing")).toEqual({
    configurationError: true,
    name: "ConfigurationError",
    message: "skein/sqlite needs better-sqlite3: npm install better-sqlite3@^12",
  });
});

test("postgresStore() without pg names the install command", async () => {
  expect(await attempt("postgres", "pg", "missing")).toEqual({
    configurationError: true,
    name: "ConfigurationError",
    message: "skein/postgres needs pg: npm install pg@^8",
  });
});

test("a peer that fails as it loads is a ConfigurationError with the reason and the fix", async () => {
  expect(await attempt("sqlite", "better-sqlite3", "broken")).toEqual({
    configurationError: true,
    name: "ConfigurationError",
    message:
      "skein/sqlite could not load better-sqlite3 (the module failed while loading). Reinstall it: npm install better-sqlite3@^12",
  });
});

test("with another package hidden instead, both factories work (the hiding changes nothing else)", async () => {
  expect(await attempt("sqlite", "not-a-peer", "missing")).toEqual({ created: true });
  expect(await attempt("postgres", "not-a-peer", "missing")).toEqual({ created: true });
});
