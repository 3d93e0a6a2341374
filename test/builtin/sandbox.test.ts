import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { homedir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { bashOutputTool, bashTool } from "../../src/builtin/bash.ts";
import {
  bwrapArgs,
  probeSandbox,
  sandboxPolicy,
  setSandboxProbeForTesting,
} from "../../src/builtin/sandbox.ts";
import { useEnv } from "../support/env.ts";
import { pidsWithCmdline } from "../support/processes.ts";
import { sleep, waitFor } from "../support/promises.ts";
import { closeServer, listenLocal } from "../support/servers.ts";
import { invoke, type ShellFixture, shellFixture } from "./shell-harness.ts";

// These run bubblewrap for real. Without it every test fails (not a skip, not one suite error).
const realProbe = await probeSandbox();
beforeEach(() => {
  if (!realProbe.available) {
    throw new Error(`bubblewrap is required for the sandbox tests: ${realProbe.reason}`);
  }
});

const tag = () => randomBytes(6).toString("hex");

let fx: ShellFixture;
beforeEach(() => {
  fx = shellFixture({ sandboxed: true, readDenyPatterns: [".env", "secrets/**", "*.pem"] });
});
afterEach(() => {
  setSandboxProbeForTesting(undefined);
  fx?.cleanup();
});

const sandboxed = (command: string, extra: Record<string, unknown> = {}) =>
  invoke(bashTool(fx.env), { command, ...extra });

describe("probe and policy", () => {
  it("finds bwrap and a working trial sandbox", async () => {
    const probe = await probeSandbox();
    expect(probe).toMatchObject({ available: true });
    expect(probe.bwrap).toMatch(/\/bwrap$/);
  });

  it("describes the policy", () => {
    expect(sandboxPolicy("/ws", true)).toEqual({
      kind: "bubblewrap",
      available: true,
      network: "none",
      filesystem: "workspace",
      writable: ["/ws", "/tmp (private)"],
    });
  });

  it("orders mounts so the private /tmp and home cannot cover the workspace", () => {
    mkdirSync(join(fx.root, ".git"));
    const args = bwrapArgs({
      root: fx.root,
      cwd: join(fx.root, "sub"),
      maskPaths: [],
      env: { PATH: "/usr/bin", HOME: "/tmp" },
      home: homedir(),
    });
    const at = (...flag: string[]) =>
      args.findIndex((_, i) => flag.every((part, j) => args[i + j] === part));
    expect(args.slice(0, 3)).toEqual(["--ro-bind", "/", "/"]);
    expect(at("--tmpfs", "/tmp")).toBeGreaterThan(0);
    expect(at("--tmpfs", "/tmp")).toBeLessThan(at("--bind", fx.root, fx.root));
    expect(at("--bind", fx.root, fx.root)).toBeLessThan(
      at("--ro-bind", join(fx.root, ".git"), join(fx.root, ".git")),
    );
    for (const flag of ["--unshare-all", "--die-with-parent", "--new-session", "--clearenv"]) {
      expect(args).toContain(flag);
    }
    expect(at("--cap-drop", "ALL")).toBeGreaterThan(0);
    expect(args).not.toContain("--share-net");
    expect(args.slice(-2)).toEqual(["--chdir", join(fx.root, "sub")]);
  });
});

describe("filesystem", () => {
  it("lets the command write in the workspace", async () => {
    const result = await sandboxed("echo made > made.txt && cat made.txt");
    expect(result.isError).toBeFalsy();
    expect(readFileSync(join(fx.root, "made.txt"), "utf8")).toBe("made\n");
  });

  it("refuses writes outside the workspace", async () => {
    const name = `skein-sandbox-${tag()}`;
    const home = homedir();
    const result = await sandboxed(
      `touch /etc/${name}; echo "etc=$?"; touch ${home}/${name}; echo "home=$?"; touch /usr/${name}; echo "usr=$?"`,
    );
    expect(result.text).toMatch(/etc=[1-9]/);
    expect(result.text).toMatch(/home=[1-9]/);
    expect(result.text).toMatch(/usr=[1-9]/);
    expect(existsSync(`/etc/${name}`)).toBe(false);
    expect(existsSync(join(home, name))).toBe(false);
  });

  it("hides the real home, and a command cannot unmount what hides it", async () => {
    const marker = join(homedir(), `.skein-sandbox-marker-${tag()}`);
    writeFileSync(marker, "home-secret-value");
    try {
      const list = `echo "listed=$(ls -A ${homedir()} | grep -c skein-sandbox-marker)"`;
      const result = await sandboxed(
        `${list}; cat ${marker}; umount ${homedir()}; ${list}; cat ${marker}; echo done`,
      );
      expect(result.text).toContain("done");
      expect(result.text).not.toContain("home-secret-value");
      expect(result.text).not.toMatch(/listed=[1-9]/);
      expect(result.text.match(/listed=0/g)).toHaveLength(2);
    } finally {
      rmSync(marker, { force: true });
    }
  });

  it("gives a private /tmp", async () => {
    const name = `skein-private-${tag()}`;
    const result = await sandboxed(`echo x > /tmp/${name} && echo wrote`);
    expect(result.text).toContain("wrote");
    expect(existsSync(`/tmp/${name}`)).toBe(false);
  });

  it("keeps .git, .vscode, .bashrc and .mcp.json read-only", async () => {
    mkdirSync(join(fx.root, ".git"));
    writeFileSync(join(fx.root, ".git", "config"), "[core]\n");
    mkdirSync(join(fx.root, ".vscode"));
    writeFileSync(join(fx.root, ".bashrc"), "# rc\n");
    writeFileSync(join(fx.root, ".mcp.json"), "{}\n");
    const result = await sandboxed(
      [
        "cat .git/config",
        'echo "[evil]" >> .git/config; echo "git=$?"',
        'mkdir .git/hooks; echo "hooks=$?"',
        'touch .vscode/settings.json; echo "vscode=$?"',
        'echo evil >> .bashrc; echo "bashrc=$?"',
        'echo evil > .mcp.json; echo "mcp=$?"',
      ].join("; "),
    );
    expect(result.text).toContain("[core]");
    for (const name of ["git", "hooks", "vscode", "bashrc", "mcp"]) {
      expect(result.text).toMatch(new RegExp(`${name}=[1-9]`));
    }
    expect(readFileSync(join(fx.root, ".git", "config"), "utf8")).toBe("[core]\n");
    expect(existsSync(join(fx.root, ".vscode", "settings.json"))).toBe(false);
    expect(readFileSync(join(fx.root, ".bashrc"), "utf8")).toBe("# rc\n");
  });

  it("cannot create protected top-level entries; removes those created below, and says so", async () => {
    mkdirSync(join(fx.root, ".git"));
    writeFileSync(join(fx.root, ".git", "config"), "[core]\n");
    const result = await sandboxed(
      [
        'echo x > .mcp.json; echo "top-mcp=$?"',
        'mkdir -p .vscode && echo {} > .vscode/tasks.json; echo "top-vscode=$?"',
        'touch .bashrc; echo "top-bashrc=$?"',
        'mkdir -p .skein && echo {} > .skein/settings.json; echo "top-skein=$?"',
        "echo '[submodule]' > .gitmodules; echo \"top-gitmodules=$?\"",
        'ln -s sub .idea; echo "top-idea=$?"',
        "mkdir -p sub/.vscode && echo {} > sub/.vscode/tasks.json",
        "touch sub/.bashrc",
        "mkdir -p new/deep/.skein && echo {} > new/deep/.skein/settings.json",
        "ln -s ../new sub/.idea",
        'echo "[evil]" >> .git/config; echo "git=$?"',
        "echo fine > normal.txt",
        "mkdir -p sub/dir && echo fine > sub/dir/file.txt",
      ].join("; "),
    );
    expect(result.isError).toBe(true);
    for (const name of ["mcp", "vscode", "bashrc", "skein", "gitmodules", "idea"]) {
      expect(result.text).toMatch(new RegExp(`top-${name}=[1-9]`));
    }
    // The placeholders that stood in for the missing names are gone too.
    for (const name of [".mcp.json", ".vscode", ".bashrc", ".skein", ".gitmodules", ".idea"]) {
      expect(existsSync(join(fx.root, name))).toBe(false);
    }
    for (const name of ["sub/.vscode", "sub/.bashrc", "new/deep/.skein", "sub/.idea"]) {
      expect(existsSync(join(fx.root, name))).toBe(false);
      expect(result.text).toContain(
        `the sandbox removed ${name}, which commands may not create (protected path)`,
      );
    }
    // The symlink went, not what it pointed at.
    expect(existsSync(join(fx.root, "new", "deep"))).toBe(true);
    expect(result.text).toMatch(/git=[1-9]/);
    expect(readFileSync(join(fx.root, ".git", "config"), "utf8")).toBe("[core]\n");
    expect(result.text).not.toContain("removed .git,");
    expect(readFileSync(join(fx.root, "normal.txt"), "utf8")).toBe("fine\n");
    expect(readFileSync(join(fx.root, "sub", "dir", "file.txt"), "utf8")).toBe("fine\n");
  });

  it("leaves a command that touches no protected path a success", async () => {
    writeFileSync(join(fx.root, ".bashrc"), "# rc\n");
    const result = await sandboxed("echo fine > normal.txt && cat .bashrc");
    expect(result.isError).toBeFalsy();
    expect(result.text).toBe("# rc");
    expect(readFileSync(join(fx.root, ".bashrc"), "utf8")).toBe("# rc\n");
  });

  it("removes a protected symlink the command re-pointed into the workspace", async () => {
    // A dangling link is not mounted (there is nothing to mount); the command creates its target.
    symlinkSync("sub/mcp.json", join(fx.root, ".mcp.json"));
    const result = await sandboxed("echo '{\"evil\":1}' > .mcp.json");
    expect(result.isError).toBe(true);
    expect(result.text).toContain(
      "the sandbox removed .mcp.json, which commands may not replace or re-point (protected path)",
    );
    expect(existsSync(join(fx.root, ".mcp.json"))).toBe(false);
  });

  it("removes what a command created before it timed out", async () => {
    const result = await sandboxed("touch sub/.bashrc; mkdir sub/.git; touch .bashrc; sleep 30", {
      timeout: 500,
    });
    expect(result.text).toContain("timed out");
    expect(result.text).toContain("the sandbox removed sub/.bashrc");
    expect(result.text).toContain("the sandbox removed sub/.git");
    expect(existsSync(join(fx.root, "sub", ".bashrc"))).toBe(false);
    expect(existsSync(join(fx.root, "sub", ".git"))).toBe(false);
    expect(existsSync(join(fx.root, ".bashrc"))).toBe(false);
  });

  it("removes what a background command created, in its output and status", async () => {
    const started = await sandboxed("mkdir sub/.husky && touch sub/.husky/pre-commit", {
      run_in_background: true,
    });
    expect(started.isError).toBeFalsy();
    await waitFor(() => (fx.background.get("bash_1")?.status === "running" ? undefined : true));
    expect(fx.background.get("bash_1")?.status).toBe("failed");
    const read = await invoke(bashOutputTool(fx.env), { bash_id: "bash_1" });
    expect(read.text).toContain("the sandbox removed protected paths it created");
    expect(read.text).toContain("the sandbox removed sub/.husky, which commands may not create");
    expect(existsSync(join(fx.root, "sub", ".husky"))).toBe(false);
  });

  it("masks files and directories that Read deny rules cover (C14)", async () => {
    writeFileSync(join(fx.root, ".env"), "TOP_SECRET=one\n");
    writeFileSync(join(fx.root, "sub", ".ENV"), "TOP_SECRET=two\n");
    mkdirSync(join(fx.root, "secrets"));
    writeFileSync(join(fx.root, "secrets", "key.pem"), "TOP_SECRET=three\n");
    // "secrets-b" sorts between "secrets" and "secrets/key.pem": the nested .pem stays covered.
    mkdirSync(join(fx.root, "secrets-b"));
    writeFileSync(join(fx.root, "secrets-b", "other.pem"), "TOP_SECRET=four\n");
    writeFileSync(join(fx.root, "public.txt"), "visible\n");
    const result = await sandboxed(
      [
        'echo "[$(cat .env)]"',
        "cat sub/.ENV",
        "ls -A secrets",
        "cat secrets/key.pem",
        "cat secrets-b/other.pem",
        "python3 -c \"print(open('.env').read())\" 2>&1 || true",
        "cat public.txt",
        'echo overwrite > .env; echo "write=$?"',
      ].join("; "),
    );
    expect(result.text).toContain("[]");
    expect(result.text).toContain("visible");
    expect(result.text).not.toContain("TOP_SECRET");
    expect(result.text).toMatch(/write=[1-9]/);
    expect(readFileSync(join(fx.root, ".env"), "utf8")).toBe("TOP_SECRET=one\n");
  });

  it("keeps the working directory across sandboxed calls", async () => {
    await sandboxed("cd sub");
    expect((await sandboxed("pwd")).text).toBe(join(fx.root, "sub"));
  });
});

describe("network", () => {
  let server: Server;
  let port: number;
  let hits = 0;
  beforeAll(async () => {
    server = createServer((_, response) => {
      hits += 1;
      response.end("hello-from-host");
    });
    port = await listenLocal(server);
  });
  afterAll(() => closeServer(server));

  it("the host's loopback is reachable without the sandbox (the control)", async () => {
    const plain = { ...fx.env, sandboxed: false };
    const result = await invoke(bashTool(plain), {
      command: `exec 3<>/dev/tcp/127.0.0.1/${port} && printf 'GET / HTTP/1.0\\r\\n\\r\\n' >&3 && cat <&3`,
    });
    expect(result.text).toContain("hello-from-host");
  });

  it("cannot reach the host's loopback or anything else from inside", async () => {
    const before = hits;
    const result = await sandboxed(
      [
        `(echo > /dev/tcp/127.0.0.1/${port}) 2>/dev/null && echo tcp=REACHED || echo tcp=BLOCKED`,
        `(command -v curl >/dev/null && curl -s --max-time 3 http://127.0.0.1:${port}/) || echo curl=BLOCKED`,
        "(echo > /dev/tcp/1.1.1.1/80) 2>/dev/null && echo outside=REACHED || echo outside=BLOCKED",
      ].join("; "),
    );
    expect(result.text).toContain("tcp=BLOCKED");
    expect(result.text).toContain("curl=BLOCKED");
    expect(result.text).toContain("outside=BLOCKED");
    expect(result.text).not.toContain("hello-from-host");
    expect(hits).toBe(before);
  });
});

describe("environment", () => {
  const setEnv = useEnv();
  beforeEach(() => {
    setEnv("ANTHROPIC_API_KEY", "sk-ant-sandbox-secret");
    setEnv("SKEIN_NOT_ALLOWED", "plain-value");
  });

  it("is only the allow-list", async () => {
    const result = await sandboxed("env; cat /proc/self/environ | tr '\\0' '\\n'");
    const names = new Set(
      result.text
        .split("\n")
        .filter((line) => line.includes("="))
        .map((line) => line.slice(0, line.indexOf("="))),
    );
    // PWD, SHLVL and _ are bash's own.
    const allowed = /^(PATH|HOME|LANG|LC_[A-Z_]+|TERM|TZ|PWD|OLDPWD|SHLVL|_)$/;
    for (const name of names) expect(name).toMatch(allowed);
    expect(result.text).toContain("HOME=/tmp");
    expect(result.text).not.toContain("sk-ant-sandbox-secret");
    expect(result.text).not.toContain("plain-value");
  });
});

describe("process tree", () => {
  it("a timeout kills everything inside the sandbox", async () => {
    const needle = `sleep 10${Math.floor(Math.random() * 9)}.${Math.floor(Math.random() * 1e6)}`;
    const result = await sandboxed(`${needle} & ${needle}`, { timeout: 500 });
    expect(result.text).toContain("timed out");
    const deadline = Date.now() + 8_000;
    while (pidsWithCmdline(needle).length > 0 && Date.now() < deadline) await sleep(50);
    expect(pidsWithCmdline(needle)).toEqual([]);
  });
});

describe("without bubblewrap", () => {
  beforeEach(() => {
    setSandboxProbeForTesting(() => ({
      available: false,
      reason: "bwrap (bubblewrap) was not found on PATH",
    }));
  });

  it.each([false, true])(
    "refuses to run, says why and how to fix it (background: %s)",
    async (background) => {
      const marker = join(fx.root, "ran");
      for (let i = 0; i < 2; i++) {
        const result = await sandboxed(`touch ${marker}`, { run_in_background: background });
        expect(result.isError).toBe(true);
        expect(result.text).toContain("hardened preset");
        expect(result.text).toContain("bwrap (bubblewrap) was not found on PATH");
        expect(result.text).toContain("install bubblewrap");
        expect(result.text).toContain("not run");
      }
      await sleep(200);
      expect(existsSync(marker)).toBe(false);
      expect(fx.background.get("bash_1")).toBeUndefined();
    },
  );
});
