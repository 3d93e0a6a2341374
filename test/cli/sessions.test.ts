/**
 * `skein sessions` reads a log anyone could have written (a .skein/sessions.db planted in a
 * repository): every field it prints reaches the terminal escaped, never as control sequences,
 * in the listing, in --json and in the error a broken log gives.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { createBareAgent } from "skein";
import { sqliteStore } from "skein/sqlite";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { useTempDirs } from "../support/temp.ts";
import { lines, runCli } from "./helpers.ts";

const tempDir = useTempDirs("skein-cli-sessions-");

/** Terminal escapes of each kind: OSC (retitle), CSI (clear), C1 CSI, BEL, DEL, BiDi override, zero width, line separator. */
const EVIL = "a\u001b]0;pwned\u0007b\u001b[2Jc\u009b2Jd\u007fe\u202ef\u200bg\u2028h";
/** Anything a terminal acts on, or that hides text, besides the line ends of the output. */
const RAW = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u;

/** A workspace whose session log holds one session, started with `prompt`. */
async function plant(prompt: string): Promise<{ cwd: string; db: string; sessionId: string }> {
  const cwd = await tempDir();
  mkdirSync(join(cwd, ".skein"));
  const db = join(cwd, ".skein", "sessions.db");
  const store = sqliteStore({ path: db });
  const agent = createBareAgent({ model: scriptedModel([{ text: "ok" }]), sessionStore: store });
  const result = await agent.run(prompt);
  await store.close();
  return { cwd, db, sessionId: result.sessionId };
}

describe("skein sessions", () => {
  it("escapes a planted prompt's control characters, in the listing and in --json", async () => {
    const { cwd, sessionId } = await plant(EVIL);
    const listed = await runCli(["sessions"], { cwd });
    expect(listed.code, listed.stderr).toBe(0);
    const [line] = lines(listed.stdout);
    for (const printed of lines(listed.stdout)) expect(printed).not.toMatch(RAW);
    expect(line).toBe(
      `${sessionId}  ${line!.split("  ")[1]}  idle  a\\u001b]0;pwned\\u0007b\\u001b[2Jc\\u009b2Jd\\u007fe\\u202ef\\u200bg h`,
    );

    const json = await runCli(["sessions", "--json"], { cwd });
    expect(json.code, json.stderr).toBe(0);
    for (const printed of lines(json.stdout)) expect(printed).not.toMatch(RAW);
    // Still JSON, and it reads back to the text as written.
    const [row] = lines(json.stdout).map((printed) => JSON.parse(printed));
    expect(row.checkpoints[0].prompt).toBe(EVIL);
  }, 120_000);

  it("shows a planted time that is not one as it is, escaped", async () => {
    const { cwd, db } = await plant("plain");
    const raw = new Database(db);
    raw.prepare("UPDATE skein_entries SET at = ?").run(`2024\u001b]0;pwned\u0007`);
    raw.close();
    const listed = await runCli(["sessions"], { cwd });
    expect(listed.code, listed.stderr).toBe(0);
    for (const printed of lines(listed.stdout)) expect(printed).not.toMatch(RAW);
    expect(lines(listed.stdout)[0]).toContain("  2024\\u001b]0;pwned\\u0007  idle  plain");
  }, 120_000);

  it("escapes the error a planted session id gives, with or without --json", async () => {
    const other = await plant("plain");
    const renamed = new Database(other.db);
    renamed
      .prepare("UPDATE skein_sessions SET session_id = ?")
      .run(`x\u009b2J\u001b]0;pwned\u0007`);
    renamed.close();
    for (const args of [["sessions"], ["sessions", "--json"]]) {
      const broken = await runCli(args, { cwd: other.cwd });
      expect(broken.code).toBe(1);
      for (const printed of lines(broken.stdout + broken.stderr)) expect(printed).not.toMatch(RAW);
      expect(lines(broken.stderr).at(-1)).toMatch(
        /^skein: .*session id "x\\u009b2J\\u001b\]0;pwned\\u0007" is not valid/,
      );
    }
  }, 120_000);
});
