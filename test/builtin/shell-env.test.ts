import { describe, expect, it } from "vitest";
import {
  isCredentialVariable,
  SANDBOX_HOME,
  sandboxEnvironment,
  scrubbedEnvironment,
} from "../../src/builtin/shell-env.ts";

describe("scrubbedEnvironment", () => {
  it.each([
    "ANTHROPIC_API_KEY",
    "anthropic_base_url",
    "ANTHROPIC_AUTH_TOKEN",
    "OPENAI_ORG_ID",
    "DEEPSEEK_API_KEY",
    "gemini_api_key",
    "GITHUB_TOKEN",
    "NPM_TOKEN",
    "CLIENT_SECRET",
    "MY_SECRET_THING",
    "PGPASSWORD",
    "DB_PASSWORD_FILE",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "MYSQL_PWD",
    "SIGNING_PRIVATE_KEY",
  ])("removes %s", (name) => {
    expect(isCredentialVariable(name)).toBe(true);
    expect(scrubbedEnvironment({ [name]: "v", KEEP: "k" })).toEqual({ KEEP: "k" });
  });

  it.each([
    "PATH",
    "HOME",
    "LANG",
    "TERM",
    "SKEIN_MODEL",
    "AWS_REGION",
    "NODE_ENV",
    "TOKENIZERS_PARALLELISM",
  ])("keeps %s", (name) => {
    expect(isCredentialVariable(name)).toBe(false);
  });

  it("copies, reads process.env by default, and drops undefined values", () => {
    const source = { A: "1", B: undefined, OPENAI_API_KEY: "x" };
    const scrubbed = scrubbedEnvironment(source);
    expect(scrubbed).toEqual({ A: "1" });
    scrubbed.A = "2";
    expect(source.A).toBe("1");
    expect(scrubbedEnvironment().PATH).toBe(process.env.PATH);
  });
});

describe("sandboxEnvironment", () => {
  const source = {
    PATH: "/usr/local/bin:/usr/bin:.:node_modules/.bin:/ws/bin:/ws:/bin",
    LANG: "C.UTF-8",
    LC_ALL: "C.UTF-8",
    LC_SECRET_TOKEN: "nope",
    TERM: "xterm",
    TZ: "UTC",
    HOME: "/home/me",
    USER: "me",
    SSH_AUTH_SOCK: "/run/ssh.sock",
    ANTHROPIC_API_KEY: "sk",
  };

  it("keeps only the allow-list, with a private HOME and a PATH the workspace cannot shadow", () => {
    expect(sandboxEnvironment("/ws", source)).toEqual({
      PATH: "/usr/local/bin:/usr/bin:/bin",
      HOME: SANDBOX_HOME,
      LANG: "C.UTF-8",
      LC_ALL: "C.UTF-8",
      TERM: "xterm",
      TZ: "UTC",
    });
  });

  it("never uses the real home", () => {
    expect(sandboxEnvironment("/ws", { HOME: "/root" }).HOME).toBe("/tmp");
  });

  it("falls back to a standard PATH", () => {
    expect(sandboxEnvironment("/ws", {}).PATH).toContain("/usr/bin");
    expect(sandboxEnvironment("/ws", { PATH: "/ws/bin:." }).PATH).toContain("/usr/bin");
  });
});
