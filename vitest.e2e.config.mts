import { BaseSequencer, type TestSpecification } from "vitest/node";
import { defineConfig } from "vitest/config";
import { LANES, planLanes } from "./test/support/e2e-lanes.js";

/** Longest file first, by the measured figures (test/support/e2e-lanes.ts): each worker takes the next one when free. */
class LanesSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const order = planLanes(files.map((f) => f.moduleId)).order;
    return [...files].sort((a, b) => order.indexOf(a.moduleId) - order.indexOf(b.moduleId));
  }
}

// End-to-end suite: real Pulumi engine and providers against a real kube-apiserver.
export default defineConfig({
  test: {
    include: ["test/e2e/**/*.e2e.ts"],
    // A record and a watchdog per run: nothing it starts outlives it (test/support/run-record.ts).
    globalSetup: ["test/support/e2e-global-setup.ts"],
    pool: "forks",
    // Two lanes: two files at a time, each in a process of its own (docs/e2e-toolchain.md, "Lanes").
    maxWorkers: LANES,
    sequence: { sequencer: LanesSequencer },
    testTimeout: 900_000,
    hookTimeout: 900_000,
    // Each file's time, hooks included (test-output/e2e-files.json, printed by .ci/run).
    reporters: ["default", "json", "./test/support/file-times-reporter.ts"],
    outputFile: { json: "test-output/e2e.json" },
  },
});
