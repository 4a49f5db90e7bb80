import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Pulumi's mock runtime is process-global state: each file runs in its own process.
    pool: "forks",
    // The caller's PULUMI_*, KUBECONFIG... are scrubbed before each file: the results never depend on them.
    setupFiles: ["test/support/hermetic-env.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // The JSON report is what .ci/run counts ("N passed, N failed").
    reporters: ["default", "json"],
    outputFile: { json: "test-output/unit.json" },
  },
});
