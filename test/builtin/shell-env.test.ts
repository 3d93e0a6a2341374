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
    "SSH_AUTH_SOCK",
    "ssh_auth_sock",
    "SENDGRID_APIKEY",
    "APIKEY",
    "API_KEY",
    "OPENROUTER_API_KEY_2",
    "GH_PAT",
    "azure_devops_pat",
    "NPM_CONFIG__AUTH",
    "npm_config__auth",
    "BASIC_AUTH",
    "DOCKER_AUTH_CONFIG",
    "HTTP_AUTHORIZATION",
    "TOKEN",
    "GITHUB_TOKEN_2",
    "NPM_AUTHTOKEN",
    "SLACK_ACCESSTOKEN",
    "GPG_PASSPHRASE",
    "DB_PWD",
    "AZURE_CREDENTIAL_FILE",
    "ACCESS_KEY",
    "SSH_PRIVATE_KEY_PATH",
    "STRIPE_KEY",
    "GIT_ASKPASS",
    "SSH_ASKPASS",
    "KRB5CCNAME",
    "BW_SESSION",
    "OP_SESSION_my",
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
    "PWD",
    "OLDPWD",
    "DATABASE_URL",
    "REDIS_URL",
    "SENTRY_DSN",
    "GIT_AUTHOR_NAME",
    "GIT_AUTHOR_EMAIL",
    "AUTHOR",
    "KEYBOARD_LAYOUT",
    "MONKEY",
    "COMPAT_MODE",
    "XDG_SESSION_ID",
    "SSH_CONNECTION",
    "PATHEXT",
    "ANDROID_TOKENIZER",
  ])("keeps %s", (name) => {
    expect(isCredentialVariable(name)).toBe(false);
  });

  it("keeps a credential inside a URL: only names are checked (a known gap)", () => {
    const source = { DATABASE_URL: "postgres://user:hunter2@db/app", SSH_AUTH_SOCK: "/run/a" };
    expect(scrubbedEnvironment(source)).toEqual({ DATABASE_URL: source.DATABASE_URL });
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
