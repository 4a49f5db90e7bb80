import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createStatusCommand } from "../cli/commands/status";
import { printable, redactUrlPasswords, shownValue } from "../src/core/text";
import { capture, healthyCluster, makeProject, node, runCommand, snapshot, stackFile, type TestProject } from "./support/command-helpers";

describe("terminal escapes from the cluster are shown escaped", () => {
  let project: TestProject;
  beforeAll(() => {
    project = makeProject({ bench: stackFile({ "ui-exposure:entries": ["argocd"] }) });
  });
  afterAll(() => project.remove());

  it("escapes ESC and OSC 52 sequences in names read from the cluster", async () => {
    const hostile = "bench\u001b]52;c;ZXZpbA==\u0007\u001b[2J\u009b31m\u202e";
    const objects = healthyCluster().map((o) => ((o as { kind?: string }).kind === "Node" ? node(hostile, "127.0.0.2") : o));
    const c = capture(project.dir);
    const code = await runCommand(
      "status",
      createStatusCommand({ connect: async () => snapshot(objects), readOutputs: async () => ({}) }),
      ["--stack", "bench"],
      c,
    );
    // The outputs publish nothing, so no Service is proven ours (DRIFT, 3): what counts here is the escaping.
    expect(code).toBe(3);
    const text = c.all();
    expect(text).toContain("bench\\x1b]52;c;ZXZpbA==\\x07\\x1b[2J\\x9b31m\\u202e");
    expect([...text].some((ch) => ch !== "\n" && ch !== "\t" && printable(ch) !== ch)).toBe(false);
  });

  it("printable keeps newlines, tabs and unicode text", () => {
    expect(printable("a\tb\nc é ü 日本")).toBe("a\tb\nc é ü 日本");
  });
});

describe("redactUrlPasswords", () => {
  it("hides the password of every URL in a text, keeping the user name, host and the rest", () => {
    expect(redactUrlPasswords("unable to open bucket postgres://team:s3cr%40t:x@127.0.0.1:5432/state?sslmode=disable: refused")).toBe(
      "unable to open bucket postgres://team:****@127.0.0.1:5432/state?sslmode=disable: refused",
    );
    expect(redactUrlPasswords("a s3://AKIA:wJalr/x@b and postgres://:pw@h/db")).toBe("a s3://AKIA:****@b and postgres://:****@h/db");
  });

  it("hides a password given as a query parameter", () => {
    expect(redactUrlPasswords("postgres://h/db?user=team&password=pw&sslmode=disable")).toBe("postgres://h/db?user=team&password=****&sslmode=disable");
  });

  it("leaves URLs without a password as they are (a user name alone is no secret)", () => {
    for (const t of ["postgres://team@127.0.0.1:5432/state", "file://./.pulumi-state", "http://127.0.0.11:30080/", "user:pw is not a URL"]) {
      expect(redactUrlPasswords(t)).toBe(t);
    }
  });
});

describe("shownValue", () => {
  it("escapes like printableValue and cuts, saying the full length", () => {
    expect(shownValue("a\nb", 10)).toBe("a\\x0ab");
    expect(shownValue("abcdef", 3)).toBe("abc... (6 characters)");
    expect(shownValue("abc", 3)).toBe("abc");
  });
});
