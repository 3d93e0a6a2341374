/** Environment variables a test sets, put back as they were after it. */
import { afterEach } from "vitest";

/**
 * Returns `setEnv(name, value)` for the tests of a file (or describe block): it sets a variable
 * (`undefined` unsets it), and after each test every variable it touched is put back, unset
 * again if it was unset. Variables a test assigns itself are put back too once `setEnv` saw them.
 */
export function useEnv(): (name: string, value: string | undefined) => void {
  const saved = new Map<string, string | undefined>();
  afterEach(() => {
    for (const [name, value] of saved) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
    saved.clear();
  });
  return (name, value) => {
    if (!saved.has(name)) saved.set(name, process.env[name]);
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  };
}
