import { defineConfig } from "vitest/config";

// The e2e suite's set-up around one file that test/e2e/processes.e2e.ts interrupts.
export default defineConfig({
  test: {
    include: ["test/support/interrupted-run.fixture.ts"],
    pool: "forks",
    testTimeout: 900_000,
    globalSetup: ["test/support/e2e-global-setup.ts"],
  },
});
