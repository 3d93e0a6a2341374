/**
 * A throwaway Postgres cluster for the queue benchmark, as test/support/postgres.ts starts one for
 * the tests (that file registers vitest hooks, so the bench keeps its own copy): initdb and
 * pg_ctl in a fresh temp directory, on a free port of 127.0.0.1, as the `postgres` user through
 * runuser when run as root; stopped and removed by `stop()`. Also the cluster's CPU time.
 */
import { execFile } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);
const ROOT_DIRECTORY = "/usr/lib/postgresql";

export interface BenchPostgres {
  /** `postgres://postgres@127.0.0.1:<port>/postgres`, trust authentication. */
  url: string;
  /** CPU time (user + system) of the server's processes so far, ms: exited backends included. */
  cpuMs(): number;
  /** Immediate stop, then the directory is removed. */
  stop(): Promise<void>;
}

function postgresBin(): string {
  let versions: string[] = [];
  try {
    versions = readdirSync(ROOT_DIRECTORY).filter(
      (name) => /^\d+(\.\d+)?$/.test(name) && existsSync(join(ROOT_DIRECTORY, name, "bin/initdb")),
    );
  } catch {
    // absent: reported below
  }
  versions.sort((a, b) => Number.parseFloat(a) - Number.parseFloat(b));
  const newest = versions.at(-1);
  if (newest === undefined)
    throw new Error(
      `bench: no Postgres server under ${ROOT_DIRECTORY}/*/bin; install postgresql (apt-get install -y postgresql) for the queue benchmark.`,
    );
  return join(ROOT_DIRECTORY, newest, "bin");
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export async function startPostgres(): Promise<BenchPostgres> {
  const bin = postgresBin();
  const asRoot = process.getuid?.() === 0;
  const dir = await mkdtemp(join(tmpdir(), "skein-bench-pg."));
  const data = join(dir, "data");
  // cwd: the server's user may not be able to enter the bench's working directory.
  const as = (program: string, args: string[]) =>
    asRoot
      ? run("runuser", ["-u", "postgres", "--", join(bin, program), ...args], { cwd: dir })
      : run(join(bin, program), args, { cwd: dir });
  const pgCtl = (args: string[]) => as("pg_ctl", ["-D", data, ...args]);
  try {
    if (asRoot) {
      await run("chown", ["postgres:postgres", dir]);
      await run("chmod", ["700", dir]);
    }
    await as("initdb", ["-D", data, "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync"]);
    // Another process may take the free port before the server binds it: try a few.
    for (let attempt = 1; ; attempt++) {
      const port = await freePort();
      // -F (no fsync), as the tests run it: the figures are the work, not this disk's flushes.
      const options = `-F -c listen_addresses=127.0.0.1 -p ${port} -k ${dir} -c max_connections=200`;
      try {
        await pgCtl(["-l", join(dir, "log"), "-w", "-o", options, "start"]);
      } catch (error) {
        if (attempt < 3) continue;
        const log = await readFile(join(dir, "log"), "utf8").catch(() => "(no log)");
        throw new Error(`bench: pg_ctl start failed: ${String(error)}\n${log}`);
      }
      const postmaster = Number(readFileSync(join(data, "postmaster.pid"), "utf8").split("\n")[0]);
      return {
        url: `postgres://postgres@127.0.0.1:${port}/postgres`,
        cpuMs: () => clusterCpuMs(postmaster),
        stop: async () => {
          try {
            await pgCtl(["-m", "immediate", "-w", "stop"]);
          } finally {
            await rm(dir, { recursive: true, force: true });
          }
        },
      };
    }
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
}

const TICKS_PER_MS = 100 / 1_000; // USER_HZ, 100 on Linux

/** /proc/<pid>/stat after the command name: state, ppid, ... utime, stime, cutime, cstime. */
function stat(pid: string | number): string[] | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, "utf8");
    return text.slice(text.lastIndexOf(")") + 2).split(" ");
  } catch {
    return undefined; // exited meanwhile
  }
}

/**
 * The postmaster's own time and that of the backends it has reaped (cutime, cstime), plus the
 * time of its children still running: every process of the cluster, exited ones included.
 */
function clusterCpuMs(postmaster: number): number {
  const ticks = (fields: string[], from: number, count: number) =>
    fields.slice(from, from + count).reduce((total, field) => total + Number(field), 0);
  const own = stat(postmaster);
  if (!own) return Number.NaN;
  let total = ticks(own, 11, 4);
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    const fields = stat(pid);
    if (fields && Number(fields[1]) === postmaster) total += ticks(fields, 11, 2);
  }
  return total / TICKS_PER_MS;
}
