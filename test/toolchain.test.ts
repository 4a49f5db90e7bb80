import { describe, expect, it } from "vitest";
import { STAGES, stageStartLine } from "../src/adapters/sandbox/toolchain";

describe("the toolchain build's progress", () => {
  it("a stage's line gives its own expected time and the whole build's elapsed time, never as the stage's (found by a new user)", () => {
    const missing = STAGES.filter((s) => s.name !== "pulumi");
    expect(stageStartLine("langhost", missing, 600)).toBe("toolchain: [1/6] building langhost, expected 17 s (the build started 10 min ago)");
    expect(stageStartLine("kube-scheduler", missing, 45)).toBe("toolchain: [6/6] building kube-scheduler, expected 2 min (the build started 45 s ago)");
    expect(stageStartLine("helm", missing, 5)).toBe("toolchain: building helm, expected ? (the build started 5 s ago)");
  });
});
