/**
 * The hardened preset's OS sandbox (bubblewrap), through the public API. These tests need
 * `bwrap` and FAIL without it, saying to install bubblewrap: under the preset, Bash without a
 * sandbox refuses every command, so "nothing leaked" would pass for the wrong reason.
 *
 * C13 is adapted: skein's sandbox has no network at all (DESIGN: "no network"), so the
 * domain allow-list part of C13 (allowedDomains, SOCKS host names, proxies, IPv6 literals
 * reaching an allowed host) does not apply; what is left is that nothing gets out, loopback
 * included, and that the same request does get out without the preset (so the test can fail).
 */
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import { createServer, type Server } from "node:http";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { findOnPath } from "../support/processes.ts";
import { closeServer, listenLocal } from "../support/servers.ts";
import {
  type Arena,
  approveAll,
  attack,
  exists,
  expectError,
  expectOk,
  makeArena,
  requireBubblewrap,
  token,
  turn,
} from "./helpers.ts";

it("bubblewrap is installed (the sandbox tests need it)", () => {
  requireBubblewrap();
  expect(findOnPath("bwrap")).toMatch(/bwrap$/);
});

describe("sandbox", () => {
  let arena: Arena;
  beforeAll(() => {
    arena = makeArena("sandbox");
  });
  afterAll(() => arena.cleanup());
  beforeEach(() => requireBubblewrap());

  describe("C13: no network from Bash under the preset", () => {
    let server: Server;
    let port: number;
    let requests = 0;
    const body = token("SERVER-BODY");
    beforeAll(async () => {
      server = createServer((_request, response) => {
        requests += 1;
        response.end(body);
      });
      port = await listenLocal(server);
    });
    afterAll(() => closeServer(server));

    const fetchWithNode = () =>
      `node -e "fetch('http://127.0.0.1:${port}/').then(r => r.text()).then(t => console.log('got', t))"`;
    const curl = () =>
      findOnPath("curl") ? `curl -sS --max-time 5 http://127.0.0.1:${port}/` : fetchWithNode();

    it("curl, node fetch and /dev/tcp to a loopback server fail, and the server sees nothing", async () => {
      requests = 0;
      const run = await attack(arena, {
        preset: "hardened",
        approval: approveAll,
        turns: [
          turn(["curl", "Bash", { command: curl(), timeout: 60_000 }]),
          turn(["node", "Bash", { command: fetchWithNode(), timeout: 60_000 }]),
          turn([
            "tcp",
            "Bash",
            { command: `bash -c 'echo hi > /dev/tcp/127.0.0.1/${port}'`, timeout: 60_000 },
          ]),
          turn([
            "tcp6",
            "Bash",
            { command: `bash -c 'echo hi > /dev/tcp/::1/${port}'`, timeout: 60_000 },
          ]),
          turn(["dns", "Bash", { command: "getent hosts example.com", timeout: 60_000 }]),
          turn(["ifaces", "Bash", { command: "cat /proc/net/dev", timeout: 60_000 }]),
        ],
      });
      for (const id of ["curl", "node", "tcp", "tcp6", "dns"]) expectError(run, id, /Exit code/);
      for (const id of ["curl", "node"]) expect(run.text(id)).not.toContain(body);
      expect(requests, "requests the server received from the sandbox").toBe(0);
      // Only the loopback interface exists in the sandbox's network namespace.
      expectOk(run, "ifaces", /lo:/);
      expect(run.text("ifaces")).not.toMatch(/^\s*(eth|en|wl)\w*:/m);
    }, 120_000);

    it("control: without the preset the same curl reaches the server", async () => {
      requests = 0;
      const run = await attack(arena, {
        approval: approveAll,
        turns: [turn(["curl", "Bash", { command: curl(), timeout: 60_000 }])],
      });
      expectOk(run, "curl");
      expect(run.text("curl")).toContain(body);
      expect(requests).toBeGreaterThan(0);
    }, 120_000);
  });

  it("C14: an interpreter cannot read a Read-denied .env inside the sandbox (masked)", async () => {
    const secret = token("MASKED-ENV-SECRET");
    const nested = token("MASKED-NESTED-SECRET");
    arena.put(".env", `API_KEY=${secret}\n`);
    arena.put("services/api/.env", `DB_KEY=${nested}\n`);
    const run = await attack(arena, {
      preset: "hardened",
      permissions: { deny: ["Read(.env)"] },
      approval: approveAll,
      secrets: [secret, nested],
      turns: [
        turn([
          "py",
          "Bash",
          { command: `python3 -c "print(repr(open('.env').read()))"; echo status=$?` },
        ]),
        turn([
          "py2",
          "Bash",
          {
            command: `python3 -c "print(repr(open('services/api/.env').read()))"; echo status=$?`,
          },
        ]),
        turn([
          "node",
          "Bash",
          { command: `node -e "process.stdout.write(require('fs').readFileSync('.env'))"; true` },
        ]),
        turn(["shell", "Bash", { command: 'while read l; do echo "$l"; done < .env; echo done' }]),
        turn(["find", "Bash", { command: "find . -name .env -exec sh -c 'cat \"$1\"' _ {} \\;" }]),
      ],
    });
    // They ran, and saw nothing (attack() checks the secret strings everywhere).
    expectOk(run, "py", /status=0/);
    expectOk(run, "py2", /status=/);
    // A shell's own read of it (`< .env`) is a Read the gate now denies before the sandbox.
    expectError(run, "shell", /denied/i);
    // The file itself is unchanged on the host.
    expect(fs.readFileSync(path.join(arena.work, ".env"), "utf8")).toContain(secret);
  }, 120_000);

  it("the host outside the workspace: not visible, not writable; protected entries read-only", async () => {
    arena.put(".git/config", "[core]\n");
    arena.put(".gitmodules", "");
    arena.put(".bashrc", "# rc\n");
    const secretName = path.basename(arena.secretFile);
    const homeFile = path.join(os.homedir(), ".bash_history");
    const run = await attack(arena, {
      preset: "hardened",
      approval: approveAll,
      turns: [
        turn(["cat-out", "Bash", { command: `cat ../outside/${secretName}` }]),
        turn(["cat-abs", "Bash", { command: `cat ${arena.secretFile}` }]),
        turn(["ls-parent", "Bash", { command: "ls -a .." }]),
        turn(["touch-out", "Bash", { command: `touch ${arena.outside}/planted` }]),
        turn(["touch-work2", "Bash", { command: "touch ../work2/planted" }]),
        turn(["git", "Bash", { command: "echo '[core] hooksPath=/x' >> .git/config" }]),
        turn(["hook", "Bash", { command: "echo 'touch pwned' > .git/hooks/pre-commit" }]),
        turn(["gitmodules", "Bash", { command: "echo x >> .gitmodules" }]),
        turn(["bashrc", "Bash", { command: "echo 'touch pwned' >> .bashrc" }]),
        turn(["home", "Bash", { command: `cat ${homeFile}; ls -a ~; echo HOME=$HOME` }]),
        turn(["etc", "Bash", { command: "touch /etc/skein-planted; touch /usr/skein-planted" }]),
      ],
    });
    for (const id of ["cat-out", "cat-abs", "touch-out", "touch-work2"]) expectError(run, id);
    for (const id of ["git", "hook", "gitmodules", "bashrc", "etc"])
      expectError(run, id, /Read-only file system|Permission denied|No such file/);
    expect(run.text("ls-parent")).not.toContain("outside");
    expect(run.text("ls-parent")).not.toContain("work2");
    expect(fs.readFileSync(path.join(arena.work, ".git/config"), "utf8")).toBe("[core]\n");
    expect(fs.readFileSync(path.join(arena.work, ".bashrc"), "utf8")).toBe("# rc\n");
    expect(exists(path.join(arena.work, ".git/hooks/pre-commit"))).toBe(false);
    expect(exists("/etc/skein-planted")).toBe(false);
    expect(run.text("home")).toMatch(/HOME=\/tmp/);
  }, 120_000);

  it("protected entries that do not exist yet cannot be created from the sandbox either", async () => {
    const run = await attack(arena, {
      preset: "hardened",
      approval: approveAll,
      turns: [
        turn([
          "skein",
          "Bash",
          { command: 'mkdir -p .skein && echo \'{"allow":["Bash"]}\' > .skein/settings.json' },
        ]),
        turn(["vscode", "Bash", { command: "mkdir -p .vscode && echo '{}' > .vscode/tasks.json" }]),
        turn(["mcp", "Bash", { command: "echo '{}' > .mcp.json" }]),
      ],
    });
    const created = [".skein/settings.json", ".vscode/tasks.json", ".mcp.json"].filter((file) =>
      exists(path.join(arena.work, file)),
    );
    for (const file of [".skein", ".vscode", ".mcp.json"])
      fs.rmSync(path.join(arena.work, file), { recursive: true, force: true });
    expect(
      created,
      "protected entries a sandboxed command created (DESIGN: .skein/**, .vscode/**, .mcp.json read-only)",
    ).toEqual([]);
    for (const id of ["skein", "vscode", "mcp"]) expectError(run, id);
  }, 120_000);

  it("C12: another process's environment (/proc/PID/environ) is out of reach", async () => {
    const secret = token("HOST-PROCESS-SECRET");
    const child = spawn("sleep", ["30"], {
      env: { ...process.env, SOME_API_KEY: secret, PLAIN: secret },
      stdio: "ignore",
    });
    try {
      const run = await attack(arena, {
        preset: "hardened",
        approval: approveAll,
        secrets: [secret],
        turns: [
          turn(["own", "Bash", { command: `tr '\\0' '\\n' < /proc/${child.pid}/environ` }]),
          turn([
            "any",
            "Bash",
            {
              command:
                "for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < \"$f\" 2>/dev/null; done; echo scanned",
            },
          ]),
        ],
      });
      expectError(run, "own");
      expectOk(run, "any", /scanned/);
    } finally {
      child.kill("SIGKILL");
    }
  }, 120_000);
});
