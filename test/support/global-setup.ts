/**
 * Once per test run, before any test: dist/ is built when the sources are newer, so that tests
 * starting the `skein` command run the built file (node starts it in a third of the time tsx
 * takes to compile src/cli/main.ts), as users run it.
 */
import { ensureBuilt } from "../cli/helpers.ts";

export default async function setup(): Promise<void> {
  await ensureBuilt();
}
