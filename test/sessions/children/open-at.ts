// A child for the open race: opens sqliteStore on a new file at an agreed instant (a busy wait,
// so that processes started apart open together), appends one entry, prints "opened" or the error.
import { sqliteStore } from "../../../src/sessions/sqlite.ts";

const { path, at, name } = JSON.parse(process.argv[2]!) as {
  path: string;
  at: number;
  name: string;
};
while (Date.now() < at) {
  // wait for the instant
}
try {
  const store = sqliteStore({ path });
  await store.list();
  await store.append(name, 1, ["x"]);
  await store.close();
  process.stdout.write("opened\n");
} catch (error) {
  process.stdout.write(`error ${(error as Error).message}\n`);
}
