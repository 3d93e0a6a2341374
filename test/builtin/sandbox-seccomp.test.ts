import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { bashTool } from "../../src/builtin/bash.ts";
import { probeSandbox } from "../../src/builtin/sandbox.ts";
import { unixSocketFilter } from "../../src/builtin/sandbox-seccomp.ts";
import { invoke, type ShellFixture, shellFixture } from "./shell-harness.ts";

const ALLOW = 0x7fff_0000;
const ERRNO_EPERM = 0x0005_0001;
const KILL_PROCESS = 0x8000_0000;
const X86_64 = 0xc000_003e;
const AARCH64 = 0xc000_00b7;
const I386 = 0x4000_0003;

/**
 * Runs a classic-BPF seccomp program on one syscall, as the kernel would: a small interpreter
 * for the instructions a filter may use (loads of seccomp_data words, jumps, returns).
 */
function evaluate(program: Buffer, call: { arch: number; nr: number; arg0?: number }): number {
  const data = Buffer.alloc(64);
  data.writeInt32LE(call.nr, 0);
  data.writeUInt32LE(call.arch, 4);
  data.writeUInt32LE(call.arg0 ?? 0, 16);
  let accumulator = 0;
  for (let pc = 0, steps = 0; steps < 1_000; steps++) {
    const code = program.readUInt16LE(pc * 8);
    const jt = program.readUInt8(pc * 8 + 2);
    const jf = program.readUInt8(pc * 8 + 3);
    const k = program.readUInt32LE(pc * 8 + 4);
    switch (code) {
      case 0x20: // ld [k]
        accumulator = data.readUInt32LE(k);
        pc += 1;
        break;
      case 0x15: // jeq #k
        pc += 1 + (accumulator === k ? jt : jf);
        break;
      case 0x45: // jset #k
        pc += 1 + ((accumulator & k) !== 0 ? jt : jf);
        break;
      case 0x06: // ret #k
        return k;
      default:
        throw new Error(`unexpected opcode ${code.toString(16)} at ${pc}`);
    }
  }
  throw new Error("the program did not return");
}

describe("the Unix socket filter (classic BPF)", () => {
  const x64 = unixSocketFilter("x64")!;
  const arm64 = unixSocketFilter("arm64")!;

  it("is a whole number of 8-byte instructions for the two supported architectures", () => {
    for (const program of [x64, arm64]) {
      expect(program.length % 8).toBe(0);
      expect(program.length / 8).toBeLessThan(20);
    }
    expect(unixSocketFilter("ia32")).toBeUndefined();
    expect(unixSocketFilter("riscv64")).toBeUndefined();
  });

  it("x86_64: socket(AF_UNIX) fails with EPERM; other families and calls pass", () => {
    expect(evaluate(x64, { arch: X86_64, nr: 41, arg0: 1 })).toBe(ERRNO_EPERM);
    expect(evaluate(x64, { arch: X86_64, nr: 41, arg0: 2 })).toBe(ALLOW); // AF_INET
    expect(evaluate(x64, { arch: X86_64, nr: 41, arg0: 10 })).toBe(ALLOW); // AF_INET6
    expect(evaluate(x64, { arch: X86_64, nr: 53, arg0: 1 })).toBe(ALLOW); // socketpair
    expect(evaluate(x64, { arch: X86_64, nr: 0, arg0: 1 })).toBe(ALLOW); // read
    expect(evaluate(x64, { arch: X86_64, nr: 425 })).toBe(ERRNO_EPERM); // io_uring_setup
  });

  it("x86_64: x32 calls and other ABIs (i386's socketcall) kill the process", () => {
    expect(evaluate(x64, { arch: X86_64, nr: 0x4000_0000 + 41, arg0: 1 })).toBe(KILL_PROCESS);
    expect(evaluate(x64, { arch: X86_64, nr: 0x4000_0000 + 0, arg0: 0 })).toBe(KILL_PROCESS);
    expect(evaluate(x64, { arch: I386, nr: 102, arg0: 1 })).toBe(KILL_PROCESS);
    expect(evaluate(x64, { arch: AARCH64, nr: 198, arg0: 1 })).toBe(KILL_PROCESS);
  });

  it("aarch64: socket is 198 there; 41 is another call", () => {
    expect(evaluate(arm64, { arch: AARCH64, nr: 198, arg0: 1 })).toBe(ERRNO_EPERM);
    expect(evaluate(arm64, { arch: AARCH64, nr: 198, arg0: 2 })).toBe(ALLOW);
    expect(evaluate(arm64, { arch: AARCH64, nr: 41, arg0: 1 })).toBe(ALLOW);
    expect(evaluate(arm64, { arch: AARCH64, nr: 425 })).toBe(ERRNO_EPERM);
    expect(evaluate(arm64, { arch: X86_64, nr: 41, arg0: 1 })).toBe(KILL_PROCESS);
  });
});

describe("the filter inside the sandbox", () => {
  let fx: ShellFixture;
  beforeEach(async () => {
    const probe = await probeSandbox();
    if (!probe.available) throw new Error(`bubblewrap is required here: ${probe.reason}`);
    fx = shellFixture({ sandboxed: true });
  });
  afterEach(() => fx?.cleanup());

  it("refuses AF_UNIX sockets and io_uring, and leaves the rest working", async () => {
    const python = [
      "import ctypes, errno, os, socket",
      "try:\n  socket.socket(socket.AF_UNIX)\n  print('unix=created')\nexcept OSError as e:\n  print('unix=' + errno.errorcode[e.errno])",
      "a, b = socket.socketpair(); a.send(b'x'); print('pair=' + b.recv(1).decode())",
      "socket.socket(socket.AF_INET).close(); print('inet=ok')",
      "libc = ctypes.CDLL(None, use_errno=True)",
      "r = libc.syscall(425, 1, ctypes.create_string_buffer(120))",
      "print('uring=' + (errno.errorcode[ctypes.get_errno()] if r < 0 else 'created'))",
    ].join("\n");
    const result = await invoke(bashTool(fx.env), {
      command: `python3 -c "$(printf '%s' '${Buffer.from(python).toString("base64")}' | base64 -d)" && node -e 'console.log("node=ok")'`,
    });
    expect(result.text).toContain("unix=EPERM");
    expect(result.text).toContain("pair=x");
    expect(result.text).toContain("inet=ok");
    expect(result.text).toContain("uring=EPERM");
    expect(result.text).toContain("node=ok");
  });
});
