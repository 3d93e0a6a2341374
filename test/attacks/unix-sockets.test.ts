/**
 * Issue 8, section 4: a Unix socket the host serves must be out of reach of sandboxed Bash when
 * the preset says no network. A network namespace does not stop file-system Unix sockets (the
 * control below connects through the same sandbox minus the filter would, and without the preset
 * it does); the sandbox's seccomp filter makes `socket(AF_UNIX, ...)` fail. Every client that
 * exists here is tried: python3, node, curl --unix-socket, socat, nc -U.
 */
import * as fs from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findOnPath } from "../support/processes.ts";
import {
  type Arena,
  approveAll,
  attack,
  type Call,
  expectError,
  makeArena,
  requireBubblewrap,
  token,
  turn,
} from "./helpers.ts";

interface Listener {
  path: string;
  server: Server;
  connections: number;
  close(): Promise<void>;
}

function listen(socketPath: string, reply: string): Promise<Listener> {
  const open = new Set<Socket>();
  const server = createServer();
  const listener: Listener = {
    path: socketPath,
    server,
    connections: 0,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of open) socket.destroy();
        server.close(() => resolve());
      }),
  };
  server.on("connection", (socket) => {
    listener.connections += 1;
    open.add(socket);
    socket.on("close", () => open.delete(socket));
    // An HTTP answer, so that curl prints it as well as the raw clients.
    const body = `${reply}\n`;
    socket.end(`HTTP/1.0 200 OK\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
  });
  return new Promise((resolve, reject) => {
    listener.server.once("error", reject);
    listener.server.listen(socketPath, () => resolve(listener));
  });
}

/** One Bash call per client that exists here, each connecting to `socket` and printing the reply. */
function clients(socket: string, prefix: string): Call[] {
  const quoted = JSON.stringify(socket);
  const calls: Call[] = [];
  const add = (name: string, command: string) =>
    calls.push([`${prefix}-${name}`, "Bash", { command, timeout: 60_000 }]);
  if (findOnPath("python3"))
    add(
      "python",
      `python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.settimeout(5); s.connect(sys.argv[1]); print(s.recv(4096).decode())' ${quoted}`,
    );
  add(
    "node",
    `node -e 'const s=require("net").connect(process.argv[1]); s.on("data",(d)=>process.stdout.write(String(d))); s.on("error",(e)=>{console.error(e.message); process.exit(1)})' ${quoted}`,
  );
  if (findOnPath("curl")) add("curl", `curl -sS --max-time 5 --unix-socket ${quoted} http://x/`);
  if (findOnPath("socat")) add("socat", `socat -T5 - UNIX-CONNECT:${quoted} </dev/null`);
  if (findOnPath("nc")) add("nc", `nc -U -w 5 ${quoted} </dev/null`);
  return calls;
}

describe("Unix sockets the host serves", () => {
  let arena: Arena;
  let inWorkspace: Listener;
  let inVarTmp: Listener;
  const reply = token("HOST-SOCKET-REPLY");
  beforeAll(async () => {
    requireBubblewrap();
    arena = makeArena("unix");
    inWorkspace = await listen(path.join(arena.work, "host.sock"), reply);
    inVarTmp = await listen(path.join("/var/tmp", `${token("skein-test")}.sock`), reply);
  });
  afterAll(async () => {
    for (const listener of [inWorkspace, inVarTmp]) {
      if (!listener) continue;
      await listener.close();
      fs.rmSync(listener.path, { force: true });
    }
    arena?.cleanup();
  });

  it("cannot be reached from sandboxed Bash (in the workspace or under /var/tmp), and the result says the command failed", async () => {
    const calls = [
      ...clients(inWorkspace.path, "work"),
      ...clients("host.sock", "relative"),
      ...clients(inVarTmp.path, "vartmp"),
    ];
    const run = await attack(arena, {
      preset: "hardened",
      approval: approveAll,
      secrets: [reply],
      turns: calls.map((call) => turn(call)),
    });
    for (const [id] of calls) {
      expectError(run, id);
      expect(run.text(id)).not.toContain(reply);
    }
    expect(run.text("work-node")).toMatch(/EPERM|not permitted/i);
    expect(inWorkspace.connections).toBe(0);
    expect(inVarTmp.connections).toBe(0);
  }, 120_000);

  it("an abstract socket is out of reach too", async () => {
    const name = token("skein-abstract");
    const abstract = await listen(`\0${name}`, reply);
    try {
      const run = await attack(arena, {
        preset: "hardened",
        approval: approveAll,
        secrets: [reply],
        turns: [
          turn([
            "abstract",
            "Bash",
            {
              command: `node -e 'const s=require("net").connect("\\0"+process.argv[1]); s.on("data",(d)=>process.stdout.write(String(d))); s.on("error",(e)=>{console.error(e.message); process.exit(1)})' ${name}`,
            },
          ]),
        ],
      });
      expectError(run, "abstract");
      expect(abstract.connections).toBe(0);
    } finally {
      await abstract.close();
    }
  }, 120_000);

  it("control: without the preset the same clients connect", async () => {
    const before = inWorkspace.connections + inVarTmp.connections;
    const calls = [...clients(inWorkspace.path, "work"), ...clients(inVarTmp.path, "vartmp")];
    const run = await attack(arena, {
      approval: approveAll,
      turns: calls.map((call) => turn(call)),
    });
    for (const [id] of calls) {
      expect(run.text(id), id).toContain(reply);
    }
    expect(inWorkspace.connections + inVarTmp.connections).toBe(before + calls.length);
  }, 120_000);
});
