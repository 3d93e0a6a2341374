/**
 * The seccomp filter of the hardened preset's sandbox: without it, a network namespace still lets
 * a command connect to any Unix socket it can see on the file system (a host server's socket in
 * the workspace, under /var/tmp, in the read-only system view). The filter makes
 * `socket(AF_UNIX, ...)` fail with EPERM and allows every other call; `socketpair` stays allowed
 * (its two ends reach nothing outside), as in Anthropic's sandbox-runtime. It also refuses
 * `io_uring_setup`, because io_uring can create and connect sockets without the `socket` call the
 * filter sees (libuv and others fall back to plain calls).
 *
 * bubblewrap loads a compiled classic-BPF program from a file descriptor (`--seccomp FD`). The
 * program is built here, eight bytes per instruction (`struct sock_filter`), in host byte order.
 */
import { mkdtempSync, openSync, rmSync, writeFileSync } from "node:fs";
import { endianness, tmpdir } from "node:os";
import { join } from "node:path";

// Classic BPF opcodes (linux/bpf_common.h) and seccomp return values (linux/seccomp.h).
const BPF_LD_W_ABS = 0x20; // BPF_LD | BPF_W | BPF_ABS: load 32 bits of seccomp_data
const BPF_JEQ_K = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
const BPF_JSET_K = 0x45; // BPF_JMP | BPF_JSET | BPF_K
const BPF_RET_K = 0x06; // BPF_RET | BPF_K
const RET_ALLOW = 0x7fff_0000;
const RET_ERRNO = 0x0005_0000;
const RET_KILL_PROCESS = 0x8000_0000;
const EPERM = 1;
const AF_UNIX = 1;

// Offsets in struct seccomp_data: nr, arch, then the instruction pointer and args[6] (u64 each).
const OFFSET_NR = 0;
const OFFSET_ARCH = 4;
// The low 32 bits of args[0] (little-endian hosts only); `domain` is an int.
const OFFSET_ARG0_LOW = 16;

/** Per architecture: its audit id and syscall numbers. x32 calls share x86_64's audit id. */
const ARCHES: Record<string, { audit: number; socket: number; x32Bit?: number }> = {
  x64: { audit: 0xc000_003e, socket: 41, x32Bit: 0x4000_0000 },
  arm64: { audit: 0xc000_00b7, socket: 198 },
};
/** io_uring_setup has the same number everywhere (the generic syscall table). */
const IO_URING_SETUP = 425;

type Instruction = { code: number; jt?: number; jf?: number; k: number };

/** The filter for `arch` (Node's `process.arch`), or undefined where it is not written yet. */
export function unixSocketFilter(arch: string = process.arch): Buffer | undefined {
  const spec = ARCHES[arch];
  if (!spec || endianness() !== "LE") return undefined;
  // Labels are instruction indexes; jumps are relative to the next instruction.
  const program: Instruction[] = [];
  const jumps: { at: number; jt?: string; jf?: string }[] = [];
  const labels: Record<string, number> = {};
  const emit = (code: number, k: number, jt?: string, jf?: string): void => {
    jumps.push({ at: program.length, ...(jt ? { jt } : {}), ...(jf ? { jf } : {}) });
    program.push({ code, k });
  };
  // A call from another ABI (i386 on x86_64, arm32 on arm64) has other numbers and, for i386,
  // socketcall(): nothing below would read it right, so the process is killed.
  emit(BPF_LD_W_ABS, OFFSET_ARCH);
  emit(BPF_JEQ_K, spec.audit, undefined, "kill");
  emit(BPF_LD_W_ABS, OFFSET_NR);
  if (spec.x32Bit !== undefined) emit(BPF_JSET_K, spec.x32Bit, "kill");
  emit(BPF_JEQ_K, IO_URING_SETUP, "deny");
  emit(BPF_JEQ_K, spec.socket, undefined, "allow");
  emit(BPF_LD_W_ABS, OFFSET_ARG0_LOW);
  emit(BPF_JEQ_K, AF_UNIX, "deny", "allow");
  labels.allow = program.length;
  program.push({ code: BPF_RET_K, k: RET_ALLOW });
  labels.deny = program.length;
  program.push({ code: BPF_RET_K, k: RET_ERRNO | EPERM });
  labels.kill = program.length;
  program.push({ code: BPF_RET_K, k: RET_KILL_PROCESS });
  for (const { at, jt, jf } of jumps) {
    if (jt) program[at]!.jt = labels[jt]! - at - 1;
    if (jf) program[at]!.jf = labels[jf]! - at - 1;
  }
  const bytes = Buffer.alloc(program.length * 8);
  program.forEach(({ code, jt = 0, jf = 0, k }, i) => {
    bytes.writeUInt16LE(code, i * 8);
    bytes.writeUInt8(jt, i * 8 + 2);
    bytes.writeUInt8(jf, i * 8 + 3);
    bytes.writeUInt32LE(k >>> 0, i * 8 + 4);
  });
  return bytes;
}

/** A descriptor of the program's file, which was deleted at once: nothing is left on disk. */
let keeper: number | undefined;

/**
 * A new read-only descriptor of the filter program, at offset 0, for bwrap's `--seccomp`; the
 * caller closes it once the child is spawned. The program is written once per process into a
 * private directory and deleted right after it is opened (no file to clean up, none another
 * user could swap for a weaker one); each call reopens it through `/proc/self/fd`, so that each
 * bwrap reads it from the start.
 */
export function openUnixSocketFilter(): number {
  if (keeper === undefined) {
    const program = unixSocketFilter();
    if (!program) {
      throw new Error(
        `the sandbox's Unix socket filter is not available on ${process.arch} (x64 and arm64 only)`,
      );
    }
    const dir = mkdtempSync(join(tmpdir(), "skein-seccomp-"));
    try {
      const file = join(dir, "unix-socket.bpf");
      writeFileSync(file, program, { mode: 0o400 });
      keeper = openSync(file, "r");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  return openSync(`/proc/self/fd/${keeper}`, "r");
}
