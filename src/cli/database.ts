// The Postgres database of `skein worker`, `skein enqueue` and `skein sessions --database-url`:
// its URL (the flag, else DATABASE_URL where allowed), and pg-boss and the session store on it.

import { type SessionStore, SessionStoreError, SkeinError } from "../index.ts";
import type { PgBossLike } from "../pgboss/types.ts";
import { requireApprovalSecret } from "../run/approval-secret.ts";
import { CliError } from "./failure.ts";
import { oneLine } from "./format.ts";

/** The variable that may stand in for `--database-url` (worker and enqueue). */
export const DATABASE_ENV = "DATABASE_URL";

const EXAMPLE = "postgres://user:password@localhost:5432/database";

/**
 * The database URL a command uses: `--database-url`, else `$DATABASE_URL` when `env` is given;
 * checked to be a Postgres URL. `command` names the command in the message for a missing one.
 */
export function databaseUrl(
  flag: string | undefined,
  command: string,
  env?: NodeJS.ProcessEnv,
): string {
  const fromEnv = env?.[DATABASE_ENV];
  const [value, source] =
    flag !== undefined
      ? [flag, "--database-url"]
      : fromEnv !== undefined && fromEnv !== ""
        ? [fromEnv, DATABASE_ENV]
        : [undefined, ""];
  if (value === undefined)
    throw new CliError(
      `skein ${command} needs the Postgres database of the queue and the sessions: pass --database-url ${EXAMPLE}${env ? ` or set ${DATABASE_ENV}` : ""}.`,
    );
  const url = parsePostgresUrl(value);
  // Not echoed: a mistyped URL may still hold a password.
  if (!url) throw new CliError(`${source} is not a URL; give a Postgres URL, such as ${EXAMPLE}.`);
  if (url.protocol !== "postgres:" && url.protocol !== "postgresql:")
    throw new CliError(
      `${source} is a ${url.protocol.replace(/:$/, "")}: URL; give a Postgres URL (postgres:// or postgresql://), such as ${EXAMPLE}.`,
    );
  return value;
}

/**
 * `skein worker` and `skein enqueue` share the deployment's approval secret through
 * SKEIN_APPROVAL_SECRET (a run pauses on one worker and resumes on another): checked before any
 * connection, so the line says what to set.
 */
export function requireQueueSecret(command: string): void {
  try {
    requireApprovalSecret(`skein ${command}`, undefined);
  } catch (error) {
    throw new CliError(oneLine((error as Error).message));
  }
}

/**
 * A database URL as pg reads it. WHATWG URLs refuse a user with no host, which pg accepts for a
 * Unix socket (`postgres://user@/db?host=/var/run/postgresql`): such a URL is read with a
 * placeholder host, which the caller never sends anywhere (pg gets the text as given).
 */
function parsePostgresUrl(value: string): URL | undefined {
  try {
    return new URL(value);
  } catch {
    const socket = /^(postgres(?:ql)?:\/\/[^@/?#]*@)(?=[/?#]|$)/i.exec(value);
    if (!socket) return undefined;
    try {
      const url = new URL(`${socket[1]}socket${value.slice(socket[1]!.length)}`);
      url.host = "";
      return url;
    } catch {
      return undefined;
    }
  }
}

/** The URL with its password masked, for messages. */
export function redactUrl(value: string): string {
  const url = parsePostgresUrl(value);
  if (!url) return "(the database URL)";
  if (url.password !== "") url.password = "***";
  if (url.searchParams.has("password")) url.searchParams.set("password", "***");
  return url.toString();
}

/** pg-boss 10 as the command uses it: what skein/pgboss needs, and starting and stopping it. */
export interface CommandBoss extends PgBossLike {
  start(): Promise<unknown>;
  stop(options?: { graceful?: boolean; close?: boolean; wait?: boolean }): Promise<void>;
}

export interface Database {
  boss: CommandBoss;
  store: SessionStore;
  /** Stops pg-boss and closes the store; never throws, and gives up on a step after `withinMs`. */
  close(withinMs?: number): Promise<void>;
}

/**
 * Starts pg-boss (`new PgBoss(...)`, then `start()`, which creates its schema on first use) and
 * opens the Postgres session store on `url`. A missing pg-boss or pg is an error naming what to
 * install; a database that cannot be reached says where it looked. `worker: false` starts pg-boss
 * as a client only (no maintenance or schedules: `skein enqueue`).
 */
export async function openDatabase(
  url: string,
  options: { command: string; worker: boolean; onError: (error: Error) => void },
): Promise<Database> {
  const { pgBossClass } = await import("../pgboss/peers.ts");
  const PgBoss = pgBossClass(`skein ${options.command}`);
  const boss = new PgBoss(
    options.worker
      ? { connectionString: url }
      : { connectionString: url, supervise: false, schedule: false },
  ) as CommandBoss;
  // Without a listener an "error" event (a lost connection) would end the process.
  boss.on("error", options.onError);
  try {
    await boss.start();
  } catch (error) {
    await boss.stop({ graceful: false, close: true, wait: false }).catch(() => {});
    throw connectionError(url, error);
  }
  const { postgresStore } = await import("../sessions/postgres.ts");
  const store = postgresStore({ connectionString: url });
  return {
    boss,
    store,
    async close(withinMs = 10_000) {
      await settled(boss.stop({ graceful: false, close: true }), withinMs);
      await settled(store.close(), withinMs);
    },
  };
}

/** The session store alone (`skein sessions --database-url`). */
export async function openStore(url: string): Promise<SessionStore> {
  const { postgresStore } = await import("../sessions/postgres.ts");
  return postgresStore({ connectionString: url });
}

/**
 * A failure to reach or use the database as one line: where, why, and what to check. skein's own
 * errors other than a store's failure (a session that cannot take a run now, a bad option) say
 * what they mean already and pass through.
 */
export function connectionError(
  url: string,
  error: unknown,
  options: { env: boolean } = { env: true },
): Error {
  if (error instanceof CliError) return error;
  if (SkeinError.isInstance(error) && !(error instanceof SessionStoreError)) return error;
  const { message, code } = (error ?? {}) as { message?: unknown; code?: unknown };
  const why = oneLine(String(message ?? error)) || String(code ?? "unknown error");
  const codeText = typeof code === "string" && !why.includes(code) ? ` (${code})` : "";
  return new CliError(
    `could not use the database at ${redactUrl(url)}: ${why}${codeText}. Check --database-url${options.env ? ` (or ${DATABASE_ENV})` : ""} and that the server is running.`,
  );
}

/** Waits for `promise` (its failure ignored), at most `withinMs`. */
async function settled(promise: Promise<unknown>, withinMs: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    promise.catch(() => {}),
    new Promise<void>((resolve) => {
      timer = setTimeout(resolve, withinMs);
      timer.unref();
    }),
  ]);
  clearTimeout(timer);
}
