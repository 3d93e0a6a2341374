import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

const src = (path: string) => fileURLToPath(new URL(`./src/${path}`, import.meta.url));

export default defineConfig({
  resolve: {
    // Tests import the public API by its package name, straight from the sources.
    alias: [
      { find: /^skein\/testing$/, replacement: src("testing/index.ts") },
      { find: /^skein\/sqlite$/, replacement: src("sessions/sqlite.ts") },
      { find: /^skein\/postgres$/, replacement: src("sessions/postgres.ts") },
      { find: /^skein$/, replacement: src("index.ts") },
    ],
  },
  test: {
    include: ["test/**/*.test.ts"],
    typecheck: { enabled: true, include: ["test/**/*.test-d.ts"] },
    // The JSON report is what .ci/run counts; the default reporter is for people.
    reporters: ["default", ["json", { outputFile: ".vitest-report.json" }]],
    testTimeout: 20_000,
  },
});
