import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createStatusCommand } from "../cli/commands/status";
import type { UserError } from "../src/core/errors";
import { checkStackName, parseTimeoutSeconds } from "../src/core/inputs";
import { capture, healthyCluster, makeProject, runCommand, snapshot, stackFile, type TestProject } from "./support/command-helpers";

describe("flag values: a stack name is a name, a timeout is bounded", () => {
  it.each(["/../../x", "../x", "a/b", "", ".", "..", "x\n", "-x", "a".repeat(200)])("a stack name is a name, not %j", (name) => {
    expect(() => checkStackName(name)).toThrow(/stack name/);
    try {
      checkStackName(name);
    } catch (err) {
      expect((err as UserError).exitCode).toBe(2);
    }
  });
  it.each(["bench", "dirqual", "org.proj-1_x"])("accepts the stack name %s", (name) => {
    expect(checkStackName(name)).toBe(name);
  });

  it("bounds --timeout and says so", () => {
    expect(() => parseTimeoutSeconds("1e9", "--timeout")).toThrow("--timeout must be at most 600 seconds, not '1e9'");
    expect(() => parseTimeoutSeconds("0", "--timeout")).toThrow("--timeout must be a positive number of seconds");
    expect(parseTimeoutSeconds("2.5", "--timeout")).toBe(2500);
    expect(parseTimeoutSeconds("600", "--timeout")).toBe(600_000);
  });

  let project: TestProject;
  beforeAll(() => {
    project = makeProject({ bench: stackFile() });
  });
  afterAll(() => project.remove());

  it("status refuses a stack path and an unbounded timeout with exit 2", async () => {
    const run = async (argv: string[]) => {
      const c = capture(project.dir);
      const code = await runCommand("status", createStatusCommand({ connect: async () => snapshot(healthyCluster()), readOutputs: async () => ({}) }), argv, c);
      return { code, text: c.all() };
    };
    const path = await run(["--stack", "/../../x"]);
    expect(path.code).toBe(2);
    expect(path.text).toContain("stack name");
    const timeout = await run(["--stack", "bench", "--timeout", "1e9"]);
    expect(timeout.code).toBe(2);
    expect(timeout.text).toContain("at most 600 seconds");
  });
});
