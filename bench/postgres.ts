/**
 * A throwaway Postgres cluster for the queue benchmark: the tests' (test/support/postgres-cluster.ts:
 * initdb and pg_ctl in a fresh temp directory, on a free port of 127.0.0.1, as the `postgres` user
 * through runuser when run as root, -F as the tests run it: the figures are the work, not this
 * disk's flushes), with room for 200 connections; stopped and removed by `stop()`. Also the
 * cluster's CPU time.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { startPostgres as startCluster } from "../test/support/postgres-cluster.ts";

export interface BenchPostgres {
  /** `postgres://postgres@127.0.0.1:<port>/postgres`, trust authentication. */
  url: string;
  /** CPU time (user + system) of the server's processes so far, ms: exited backends included. */
  cpuMs(): number;
  /** Immediate stop, then the directory is removed. */
  stop(): Promise<void>;
}

export async function startPostgres(): Promise<BenchPostgres> {
  const cluster = await startCluster({ maxConnections: 200 });
  const pidFile = readFileSync(join(cluster.dataDir, "postmaster.pid"), "utf8");
  const postmaster = Number(pidFile.split("\n")[0]);
  return { url: cluster.url, cpuMs: () => clusterCpuMs(postmaster), stop: cluster.stop };
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
