import { defineConfig } from "vitest/config";

// End-to-end suite: real Pulumi engine and providers against a real kube-apiserver.
export default defineConfig({
  test: {
    include: ["test/e2e/**/*.e2e.ts"],
    // A record and a watchdog per run: nothing it starts outlives it (test/support/run-record.ts).
    globalSetup: ["test/support/e2e-global-setup.ts"],
    pool: "forks",
    fileParallelism: false,
    testTimeout: 900_000,
    hookTimeout: 900_000,
    // Each file's time, hooks included (test-output/e2e-files.json, printed by .ci/run).
    reporters: ["default", "json", "./test/support/file-times-reporter.ts"],
    outputFile: { json: "test-output/e2e.json" },
  },
});
