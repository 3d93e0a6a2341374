// A child process where some packages cannot be required, as on a machine that never installed
// them: skein/pgboss must import, and its functions must say which peers to install.
import Module from "node:module";

const { hide } = JSON.parse(process.argv[2]!) as { hide: string[] };
const loader = Module as unknown as {
  _resolveFilename(request: string, ...rest: unknown[]): string;
};
const resolve = loader._resolveFilename;
loader._resolveFilename = function (this: unknown, request: string, ...rest: unknown[]) {
  if (hide.includes(request)) {
    const error = new Error(`Cannot find module '${request}'`) as NodeJS.ErrnoException;
    error.code = "MODULE_NOT_FOUND";
    throw error;
  }
  return resolve.call(this, request, ...rest);
};

// Importing the entry must work; only using it needs the peers.
const { ConfigurationError } = await import("skein");
const pgboss = await import("skein/pgboss");
console.log("imported");

// A boss by shape, as far as skein checks one: the peers are checked before it is used.
const boss = Object.fromEntries(
  [
    "send",
    "fetch",
    "complete",
    "fail",
    "cancel",
    "createQueue",
    "getQueue",
    "getQueues",
    "getJobById",
    "on",
  ].map((name) => [name, async () => null]),
);
const attempts: Record<string, () => unknown> = {
  enqueueRun: () =>
    pgboss.enqueueRun(boss as never, { agent: "a", prompt: "p", sessionStore: {} as never }),
  createWorker: () => pgboss.createWorker(boss as never, { sessionStore: {} as never, agents: {} }),
  resumeRun: () => pgboss.resumeRun(boss as never, "s", { agent: "a" }),
};
const outcomes: Record<string, unknown> = {};
for (const [name, attempt] of Object.entries(attempts)) {
  try {
    await attempt();
    outcomes[name] = { resolved: true };
  } catch (error) {
    outcomes[name] = {
      configurationError: error instanceof ConfigurationError,
      name: (error as Error).name,
      message: (error as Error).message,
    };
  }
}
console.log(JSON.stringify(outcomes));
process.exit(0);
