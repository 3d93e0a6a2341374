/**
 * Issue 8, section 6 (RELIABILITY C12): a credential inside a URL-shaped variable (a database
 * password, a token in a clone URL, a signed URL's signature) never reaches a Bash command,
 * preset or not. Without the preset the URL itself is kept, without its credentials; under the
 * preset such variables are not passed at all (its environment is an allow-list).
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { useEnv } from "../support/env.ts";
import {
  type Arena,
  approveAll,
  attack,
  expectOk,
  makeArena,
  PRESETS,
  requireBubblewrap,
  token,
  turn,
} from "./helpers.ts";

describe.each(PRESETS)("C12: credentials inside URL values ($label)", ({ preset }) => {
  let arena: Arena;
  const secrets = {
    password: token("dbpw"),
    clone: token("ghp"),
    redis: token("redispw"),
    signature: token("sig"),
    access: token("access"),
  };
  const variables: Record<string, string> = {
    DATABASE_URL: `postgres://app:${secrets.password}@db.internal:5432/main`,
    REPO_URL: `https://${secrets.clone}@github.com/acme/app.git`,
    REDIS_URL: `redis://:${secrets.redis}@cache:6379/0`,
    ASSET_URL: `https://assets.example/file?sv=2024&sig=${secrets.signature}`,
    CALLBACK_URL: `https://hooks.example/cb?access_token=${secrets.access}&page=2`,
  };
  const setEnv = useEnv();
  beforeAll(() => {
    arena = makeArena("url-env");
  });
  afterAll(() => arena.cleanup());
  beforeEach(() => {
    if (preset) requireBubblewrap();
    for (const [name, value] of Object.entries(variables)) setEnv(name, value);
  });

  it("printenv and env show the URLs without their credentials", async () => {
    const run = await attack(arena, {
      preset,
      approval: approveAll,
      secrets: Object.values(secrets),
      turns: [
        turn(["one", "Bash", { command: "printenv DATABASE_URL; echo end" }]),
        turn(["all", "Bash", { command: "env; echo end" }]),
        turn(["environ", "Bash", { command: "cat /proc/self/environ | tr '\\0' '\\n'" }]),
      ],
    });
    expectOk(run, "one", /end/);
    expectOk(run, "all", /PATH=/);
    expectOk(run, "environ", /PATH=/);
    // The secrets themselves are checked by attack(): in no result and no event.
    if (preset) {
      expect(run.text("all")).not.toMatch(/DATABASE_URL|REPO_URL|REDIS_URL/);
      return;
    }
    expect(run.text("one")).toContain("postgres://app@db.internal:5432/main");
    const all = run.text("all");
    expect(all).toContain("REPO_URL=https://github.com/acme/app.git");
    expect(all).toContain("REDIS_URL=redis://cache:6379/0");
    expect(all).toContain("ASSET_URL=https://assets.example/file?sv=2024\n");
    expect(all).toContain("CALLBACK_URL=https://hooks.example/cb?page=2");
  });
});
