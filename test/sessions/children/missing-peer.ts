// A child process where one package cannot be required, as on a machine that never installed it.
import Module from "node:module";
import { ConfigurationError } from "../../../src/core/errors.ts";

const { entry, hide, how } = JSON.parse(process.argv[2]!) as {
  entry: "sqlite" | "postgres";
  hide: string;
  how: "missing" | "broken";
};
const loader = Module as unknown as {
  _resolveFilename(request: string, ...rest: unknown[]): string;
};
const resolve = loader._resolveFilename;
loader._resolveFilename = function (this: unknown, request: string, ...rest: unknown[]) {
  if (request === hide) {
    // What Node throws for a package that is not installed, or one that fails as it loads.
    const error = new Error(
      how === "missing" ? `Cannot find module '${request}'` : "the module failed while loading",
    ) as NodeJS.ErrnoException;
    if (how === "missing") error.code = "MODULE_NOT_FOUND";
    throw error;
  }
  return resolve.call(this, request, ...rest);
};

// Importing the entry must work; only creating a store needs the peer.
const module =
  entry === "sqlite"
    ? await import("../../../src/sessions/sqlite.ts")
    : await import("../../../src/sessions/postgres.ts");
console.log("imported");
try {
  if ("sqliteStore" in module) module.sqliteStore({ path: ":memory:" });
  else module.postgresStore({ connectionString: "postgres://postgres@127.0.0.1:1/postgres" });
  console.log(JSON.stringify({ created: true }));
} catch (error) {
  console.log(
    JSON.stringify({
      configurationError: error instanceof ConfigurationError,
      name: (error as Error).name,
      message: (error as Error).message,
    }),
  );
}
