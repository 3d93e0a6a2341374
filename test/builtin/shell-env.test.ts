import { describe, expect, it } from "vitest";
import {
  isCredentialVariable,
  SANDBOX_HOME,
  sandboxEnvironment,
  scrubbedEnvironment,
  withoutUrlCredentials,
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

  it("keeps a URL variable, without the credentials inside it", () => {
    const source = { DATABASE_URL: "postgres://user:hunter2@db/app", SSH_AUTH_SOCK: "/run/a" };
    expect(scrubbedEnvironment(source)).toEqual({ DATABASE_URL: "postgres://user@db/app" });
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

describe("withoutUrlCredentials", () => {
  it.each([
    // A password goes, the user stays; an empty user goes with it.
    ["postgres://user:pw@host/db", "postgres://user@host/db"],
    [
      "postgresql://app:s3cr%40t@db.internal:5432/main?sslmode=require",
      "postgresql://app@db.internal:5432/main?sslmode=require",
    ],
    ["redis://:pw@host:6379/0", "redis://host:6379/0"],
    ["amqp://guest:guest@rabbit:5672/vhost", "amqp://guest@rabbit:5672/vhost"],
    ["http://user:pw@proxy:3128", "http://user@proxy:3128"],
    ["https://x-access-token:ghs_abc@github.com/o/r", "https://x-access-token@github.com/o/r"],
    // Passwords holding characters that should have been escaped.
    ["postgres://user:p@ss@host/db", "postgres://user@host/db"],
    ["postgres://user:pa/ss@host/db", "postgres://user@host/db"],
    ["postgres://user:pa#ss@host/db", "postgres://user@host/db"],
    // A user alone is a token in http(s) URLs, an account elsewhere.
    ["https://ghp_token@github.com/o/r.git", "https://github.com/o/r.git"],
    ["git+https://tok@github.com/o/r", "git+https://github.com/o/r"],
    ["wss://tok@socket.example/x", "wss://socket.example/x"],
    ["ssh://git@github.com/o/r", "ssh://git@github.com/o/r"],
    ["postgres://user@host/db", "postgres://user@host/db"],
    // Secret query parameters are dropped whole; the others and the fragment stay.
    ["https://api.example/x?access_token=abc&page=2#top", "https://api.example/x?page=2#top"],
    ["https://h/x?password=p", "https://h/x"],
    ["https://h/x?q=a+b&api_key=k&key=z&apikey=y&secret=s&pwd=w", "https://h/x?q=a+b"],
    [
      "https://acct.blob.core.windows.net/c/b?sv=2024&se=2030&sig=abc%2Bdef",
      "https://acct.blob.core.windows.net/c/b?sv=2024&se=2030",
    ],
    [
      "https://s3.example/b/k?X-Amz-Algorithm=AWS4&X-Amz-Credential=AKIA&X-Amz-Signature=ff&X-Amz-Security-Token=tt",
      "https://s3.example/b/k?X-Amz-Algorithm=AWS4",
    ],
    // Every URL of a list; text around them untouched.
    ["redis://:a@h1,redis://:b@h2", "redis://h1,redis://h2"],
    [
      "mongodb://u:p@h1:27017,h2:27017/db?replicaSet=rs",
      "mongodb://u@h1:27017,h2:27017/db?replicaSet=rs",
    ],
    [
      "primary=postgres://u:p@a/db replica=postgres://u:q@b/db",
      "primary=postgres://u@a/db replica=postgres://u@b/db",
    ],
  ])("%s -> %s", (value, expected) => {
    expect(withoutUrlCredentials(value)).toBe(expected);
  });

  it.each([
    "plain text, no url",
    "http://localhost:3000/api",
    "http://[::1]:8080/x",
    "https://registry.npmjs.org/@scope%2fpkg",
    "file:///home/me/x",
    "/usr/local/bin:/usr/bin",
    "https://example.com/search?q=token&page=2",
  ])("leaves %s alone", (value) => {
    expect(withoutUrlCredentials(value)).toBe(value);
  });

  it("is linear: a long value with many URL-like parts returns at once", () => {
    const value = `${"a://b@".repeat(20_000)}${"x".repeat(200_000)}://${"y".repeat(200_000)}`;
    expect(withoutUrlCredentials(value).length).toBeLessThanOrEqual(value.length);
  });

  it("applies inside the sandbox's allow-list as well", () => {
    expect(sandboxEnvironment("/ws", { LANG: "C", LC_X: "https://t@h/x" }).LC_X).toBe(
      "https://h/x",
    );
  });
});
