import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Pulumi's mock runtime is process-global state: one file at a time per worker.
    pool: "forks",
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
