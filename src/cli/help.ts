// The help texts of the skein command (program.ts) beyond what commander writes from the options.

import { DATABASE_ENV } from "./database.ts";

export const ENVIRONMENT = `
Environment:
  ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL   for --provider anthropic (the base URL without /v1)
  OPENAI_API_KEY, OPENAI_BASE_URL         for --provider openai (the base URL with /v1)
  GEMINI_API_KEY (or GOOGLE_GENERATIVE_AI_API_KEY), GOOGLE_GEMINI_BASE_URL
                                          for --provider google (the base URL without /v1beta)
  A key is needed only for the provider's own host; --base-url for a local server needs none.
  DATABASE_URL                            for skein worker and skein enqueue (see their --help)

Examples:
  skein "what does this repository do?"
  skein --provider openai --base-url http://localhost:11434/v1 --model qwen3 "hello"
  skein --json "hello" | jq -c 'select(.type == "result")'
  skein --continue "and now the tests"
  skein --mcp-server fs --allow "mcp__fs__read_*" "summarise the notes"
  skein sessions
  skein dev
  skein demo
  skein worker --database-url postgres://localhost/app --agents ./agents.js
  skein enqueue --database-url postgres://localhost/app --agent researcher --wait "hello"

Every run is logged in .skein/sessions.db of the working directory (when the better-sqlite3
package is installed); the session id is printed at the end.

MCP servers: a .mcp.json in the working directory ({ "mcpServers": { "name": { "command",
"args", "env" } | { "url", "headers" } } }) names servers to start. Each starts only when you
approve it on the terminal, or name it with --mcp-server; off a terminal the others do not
start. Their tools are mcp__<server>__<tool>, and each call asks unless an --allow rule covers it.`;

export const DATABASE_URL_HELP = `the Postgres database of the queue and the sessions, such as postgres://user:password@host:5432/db (default: $${DATABASE_ENV})`;

export const WORKER_HELP = `
The worker runs until SIGINT (Ctrl-C) or SIGTERM, then stops taking runs and waits up to 30 s for
its running ones (what is left is recovered by the next worker, as after a crash) and exits 0; a
second signal quits at once. Errors it recovers from (a lost connection, a failed job) are logged
on stderr.

Environment:
  ${DATABASE_ENV}   stands in for --database-url

Example:
  skein worker --database-url postgres://localhost/app --agents ./agents.js --concurrency 4`;

export const ENQUEUE_HELP = `
Prints "session <id>" and "run <id>" (on stderr with --wait, whose stdout is the answer). With
--wait, exits 1 when the run did not succeed, and 130 on Ctrl-C (the run goes on).

Environment:
  ${DATABASE_ENV}   stands in for --database-url

Example:
  skein enqueue --database-url postgres://localhost/app --agent researcher --wait "summarise the notes"`;

export const SESSIONS_HELP = `
With --database-url the status is idle, paused or interrupted as the session's log says, or queued
or running while its latest run is on the queue. ${DATABASE_ENV} is not read: without the flag, the
workspace's .skein/sessions.db is listed.`;

export const DEV_HELP = `
Prints the inspector's address, http://127.0.0.1:<port>/?token=<token>: open it in a browser.
The page lists the sessions newest first, shows each run's turns and tool calls, and approves or
denies a paused run's calls (the run resumes here, with this command's provider options, rules,
skills, agents and MCP servers, as skein takes them, and the approval secret in .skein/). It
listens on 127.0.0.1 only; a request without the token is refused, and so is a change (approve,
deny, steer, fork, rewind) from another page.

Examples:
  skein dev
  skein dev --port 4983 --allow "Bash(npm test)"
  skein dev --agents ./agents --skills ./skills
  skein dev --database-url postgres://localhost/app`;
