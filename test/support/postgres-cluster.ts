// A throwaway Postgres server (design/sessions.md, "Throwaway Postgres for tests"): started and
// stopped by the tests (through useThrowawayPostgres in ./postgres.ts) and by the queue benchmark
// (bench/postgres.ts), so no vitest here.
import { execFile } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { closedPort } from "./servers.ts";

const run = promisify(execFile);
const ROOT_DIRECTORY = "/usr/lib/postgresql";

export interface ThrowawayPostgres {
  /** `postgres://postgres@127.0.0.1:<port>/postgres`, trust authentication. */
  url: string;
  port: number;
  /** The cluster's data directory (postmaster.pid, the server's files). */
  dataDir: string;
  /** Milliseconds taken by initdb and by pg_ctl start. */
  timings: { initdbMs: number; startMs: number };
  /** Immediate stop, then the directory is removed. */
  stop(): Promise<void>;
  /**
   * Stops the server (`mode`, default "immediate": connections cut as by a crash) and starts it
   * again on the same port and data, `downMs` later (default 0): every client loses its
   * connections, the data stays.
   */
  restart(options?: { mode?: "fast" | "immediate"; downMs?: number }): Promise<void>;
}

/** The newest installed server's bin directory; fails (never skips) when there is none. */
export function postgresBin(): string {
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
  if (newest === undefined) {
    throw new Error(
      `No Postgres server found under ${ROOT_DIRECTORY}/*/bin: install postgresql (apt-get install -y postgresql). The tests and the queue benchmark run a real server.`,
    );
  }
  return join(ROOT_DIRECTORY, newest, "bin");
}

/**
 * initdb + pg_ctl start in a fresh temp directory on a free port of 127.0.0.1. Root cannot run
 * postgres, so as root the binaries run as the `postgres` user (runuser); otherwise directly.
 */
export async function startPostgres(
  options: { maxConnections?: number } = {},
): Promise<ThrowawayPostgres> {
  const bin = postgresBin();
  const asRoot = process.getuid?.() === 0;
  const dir = await mkdtemp(join(tmpdir(), "skein-pg."));
  const data = join(dir, "data");
  // cwd: the server's user may not be able to enter the working directory.
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
    let began = performance.now();
    await as("initdb", ["-D", data, "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync"]);
    const initdbMs = performance.now() - began;
    // Another process may take the free port before the server binds it: try a few.
    for (let attempt = 1; ; attempt += 1) {
      const port = await closedPort();
      began = performance.now();
      const connections =
        options.maxConnections === undefined ? "" : ` -c max_connections=${options.maxConnections}`;
      const startOptions = `-F -c listen_addresses=127.0.0.1 -p ${port} -k ${dir}${connections}`;
      try {
        await pgCtl(["-l", join(dir, "log"), "-w", "-o", startOptions, "start"]);
      } catch (error) {
        if (attempt < 3) continue;
        const log = await readFile(join(dir, "log"), "utf8").catch(() => "(no log)");
        throw new Error(`pg_ctl start failed: ${String(error)}\n${log}`);
      }
      const startMs = performance.now() - began;
      return {
        url: `postgres://postgres@127.0.0.1:${port}/postgres`,
        port,
        dataDir: data,
        timings: { initdbMs: Math.round(initdbMs), startMs: Math.round(startMs) },
        stop: async () => {
          try {
            await pgCtl(["-m", "immediate", "-w", "stop"]);
          } finally {
            await rm(dir, { recursive: true, force: true });
          }
        },
        restart: async ({ mode = "immediate", downMs = 0 } = {}) => {
          await pgCtl(["-m", mode, "-w", "stop"]);
          if (downMs > 0) await new Promise((resolve) => setTimeout(resolve, downMs));
          try {
            await pgCtl(["-l", join(dir, "log"), "-w", "-o", startOptions, "start"]);
          } catch (error) {
            const log = await readFile(join(dir, "log"), "utf8").catch(() => "(no log)");
            throw new Error(`pg_ctl start (restart) failed: ${String(error)}\n${log.slice(-4000)}`);
          }
        },
      };
    }
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
}
