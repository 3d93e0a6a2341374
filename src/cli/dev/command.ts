// `skein dev`: the inspector. A local web page over the session store (.skein/sessions.db, or
// Postgres with --database-url), on 127.0.0.1 with a random token in the printed URL. It resumes
// paused runs with the CLI's own agent (the same provider options and rules) and the project's
// approval secret, so a run `skein` paused is approved from the page.

import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { createServer } from "node:http";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { type Agent, createAgent, type SessionStore } from "../../index.ts";
import { APPROVAL_SECRET_ENV } from "../../run/approval-secret.ts";
import { connectionError, openStore, redactUrl } from "../database.ts";
import { CliError } from "../failure.ts";
import { askForMcpCalls, chooseMcpServers, readMcpConfig } from "../mcp.ts";
import { projectSecret, SECRET_READ_DENY } from "../project-dir.ts";
import { cliSystemPrompt, type ProviderFlags, resolveProvider } from "../provider.ts";
import { requireCliStore } from "../sessions.ts";
import { type SkillFlags, skillOptions } from "../skills.ts";
import type { Terminal } from "../terminal.ts";
import { createDevServer, type PageAssets } from "./server.ts";

/** The provider, rules and tools are `skein`'s own, so a run `skein` paused resumes with its tools. */
export interface DevFlags extends ProviderFlags, SkillFlags {
  databaseUrl?: string;
  port?: number;
  maxTurns?: number;
  allow?: string[];
  deny?: string[];
  /** MCP servers of .mcp.json to start (only those named: the page asks nothing on a terminal). */
  mcpServer?: string[];
}

/**
 * Serves the inspector until SIGINT or SIGTERM (or `signal`), then closes the server, waits for
 * the runs it drives to stop, and resolves 0. The URL goes to stdout as `skein dev: <url>`.
 */
export async function runDev(
  flags: DevFlags,
  terminal: Terminal,
  signal?: AbortSignal,
): Promise<number> {
  const cwd = process.cwd();
  // The flags are checked before anything opens: a bad folder or server name is an error now.
  const named = skillOptions(flags, cwd);
  const mcp = await namedMcpServers(flags, cwd, terminal);
  const { store, where } = await openDevStore(flags);
  const secret =
    flags.databaseUrl !== undefined && process.env[APPROVAL_SECRET_ENV]
      ? process.env[APPROVAL_SECRET_ENV]
      : projectSecret(cwd);
  let agent: Agent | undefined;
  const token = randomBytes(24).toString("base64url");
  const inspector = createDevServer({
    store,
    token,
    root: cwd,
    secret,
    agent: () => {
      // Created on the first approval: reading sessions needs no provider key.
      if (agent) return agent;
      const provider = resolveProvider(flags);
      agent = createAgent({
        model: provider.model,
        ...(named.skills ? { skills: named.skills } : {}),
        ...(named.tools.length > 0 ? { tools: named.tools } : {}),
        systemPrompt: cliSystemPrompt(cwd),
        ...(flags.maxTurns !== undefined ? { maxTurns: flags.maxTurns } : {}),
        permissions: {
          allow: flags.allow ?? [],
          deny: [...(flags.deny ?? []), SECRET_READ_DENY],
        },
        sessionStore: store,
        approvalSecret: secret,
        ...(mcp
          ? { mcpServers: mcp, hooks: { beforeToolCall: askForMcpCalls(flags.allow ?? []) } }
          : {}),
      });
      return agent;
    },
    assets: pageAssets,
  });
  const server = createServer((request, response) => inspector.handle(request, response));
  try {
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(flags.port ?? 0, "127.0.0.1", () => {
        server.off("error", reject);
        resolve();
      });
    });
  } catch (error) {
    await store.close();
    const code = (error as NodeJS.ErrnoException).code;
    throw new CliError(
      code === "EADDRINUSE"
        ? `port ${flags.port} is in use on 127.0.0.1; pass another --port, or none for a free one.`
        : `could not listen on 127.0.0.1: ${(error as Error).message}`,
    );
  }
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : flags.port;
  const origin = `http://127.0.0.1:${port}`;
  inspector.setOrigin(origin);
  terminal.stderr.write(
    `${terminal.colors.dim(`skein dev · the sessions of ${where} · Ctrl-C to stop`)}\n`,
  );
  terminal.stdout.write(`skein dev: ${origin}/?token=${token}\n`);

  await new Promise<void>((resolve) => {
    const stop = () => resolve();
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
    signal?.addEventListener("abort", stop, { once: true });
  });
  server.closeAllConnections?.();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await inspector.close();
  await agent?.close();
  await store.close();
  return 0;
}

/** The servers --mcp-server names (none other starts: nobody answers a question on this terminal). */
async function namedMcpServers(flags: DevFlags, cwd: string, terminal: Terminal) {
  const names = flags.mcpServer ?? [];
  if (names.length === 0) return undefined;
  const config = await readMcpConfig(cwd);
  const only = config && {
    ...config,
    entries: new Map([...config.entries].filter(([name]) => names.includes(name))),
  };
  const choice = await chooseMcpServers(only, names, {
    terminal,
    signal: new AbortController().signal,
    onInterrupt: () => {},
  });
  return choice.servers;
}

async function openDevStore(flags: DevFlags): Promise<{ store: SessionStore; where: string }> {
  if (flags.databaseUrl === undefined) {
    const cli = await requireCliStore(process.cwd());
    return { store: cli.store, where: cli.path };
  }
  const url = flags.databaseUrl;
  try {
    const store = await openStore(url);
    await store.list();
    return { store, where: redactUrl(url) };
  } catch (error) {
    throw connectionError(url, error, { env: false });
  }
}

let cached: PageAssets | undefined;

/** The page as the build made it: dist/cli/dev-page/, found from this module's place in dist/ or src/. */
async function pageAssets(): Promise<PageAssets | undefined> {
  if (cached) return cached;
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (let up = 0; up < 4; up++, dir = path.dirname(dir)) {
    for (const candidate of [
      path.join(dir, "cli", "dev-page"),
      path.join(dir, "dist", "cli", "dev-page"),
    ]) {
      if (!existsSync(path.join(candidate, "app.js"))) continue;
      const [js, css] = await Promise.all([
        readFile(path.join(candidate, "app.js"), "utf8"),
        readFile(path.join(candidate, "app.css"), "utf8").catch(() => ""),
      ]);
      cached = { js, css };
      return cached;
    }
  }
  return undefined;
}
