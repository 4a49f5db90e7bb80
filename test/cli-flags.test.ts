import { describe, expect, it } from "vitest";
import { asksForHelp, type CommandSpec, closest, commandHelp, editDistance, parseCommandLine } from "../cli/flags";
import { main } from "../cli/main";
import { COMMAND_NAMES, SPECS } from "../cli/specs";
import { UserError } from "../src/core/errors";

const spec = {
  name: "demo",
  summary: "a demo",
  synopsis: "--stack NAME [--timeout SECONDS] [--json]",
  description: ["Does nothing."],
  flags: {
    stack: { type: "string", short: "s", value: "NAME", description: "the stack" },
    timeout: { type: "string", value: "SECONDS", description: "per call", default: "5" },
    json: { type: "boolean", description: "machine output" },
  },
  exits: "0 ok",
} as const satisfies CommandSpec;

function usageMessage(argv: string[]): string {
  try {
    parseCommandLine(spec, argv);
  } catch (err) {
    expect(err).toBeInstanceOf(UserError);
    expect((err as UserError).exitCode).toBe(2);
    return (err as UserError).message;
  }
  throw new Error("expected a usage error");
}

describe("parseCommandLine", () => {
  it("parses the table's flags, with defaults, short forms and --flag=value", () => {
    expect(parseCommandLine(spec, ["-s", "bench", "--json"]).values).toEqual({ stack: "bench", timeout: "5", json: true });
    expect(parseCommandLine(spec, ["--stack=dirqual", "--timeout", "2"]).values).toEqual({ stack: "dirqual", timeout: "2", json: false });
  });

  it("refuses an unknown flag with the closest one, the usage line and where the help is", () => {
    expect(usageMessage(["--stack", "x", "--jsno"])).toBe(
      "unknown flag '--jsno': did you mean '--json'?\nusage: exposure demo --stack NAME [--timeout SECONDS] [--json]\n(`exposure demo --help` describes every flag)",
    );
    expect(usageMessage(["--stak=bench"]).split("\n")[0]).toBe("unknown flag '--stak': did you mean '--stack'?");
    expect(usageMessage(["--colour"]).split("\n")[0]).toBe("unknown flag '--colour'");
    expect(usageMessage(["-x"]).split("\n")[0]).toBe("unknown flag '-x'");
  });

  it("collects a repeatable flag into a list, in order, empty when absent; help says it repeats", () => {
    const repeatable = {
      ...spec,
      synopsis: "[--entry NAME]...",
      flags: { entry: { type: "string", value: "NAME", multiple: true, description: "one entry" } },
    } as const satisfies CommandSpec;
    const many: string[] = parseCommandLine(repeatable, ["--entry", "grafana", "--entry=argocd"]).values.entry;
    expect(many).toEqual(["grafana", "argocd"]);
    expect(parseCommandLine(repeatable, []).values.entry).toEqual([]);
    expect(commandHelp(repeatable)).toContain("    --entry NAME  one entry (repeatable)");
    expect(commandHelp(SPECS.status)).toMatch(/--entry NAME +report only this entry .*\(repeatable\)/);
    expect(commandHelp(SPECS.probe)).toMatch(/--entry NAME +probe only this entry's URL.*\(repeatable\)/);
  });

  it("refuses a missing value and a stray argument", () => {
    expect(usageMessage(["--stack"]).split("\n")[0]).toContain("--stack");
    expect(usageMessage(["bench"]).split("\n")[0]).toBe("unexpected argument 'bench'");
  });

  it("refuses a --stack that is no stack name as a usage error of the command, with its usage line (found by an outside tester)", async () => {
    const withStack = COMMAND_NAMES.filter((name) => Object.hasOwn(SPECS[name].flags, "stack"));
    expect(withStack).toEqual(expect.arrayContaining(["status", "drift", "probe", "access", "portal", "render"]));
    for (const name of withStack) {
      const err: string[] = [];
      const code = await main([name, "--stack", "../x"], { projectDir: "/nonexistent", stdout: () => {}, stderr: (t) => err.push(t), env: {} });
      expect(code, name).toBe(2);
      expect(err, name).toEqual([
        `exposure ${name}: --stack must be a stack name (letters, digits, '-', '_', '.', at most 100 characters, e.g. bench), not "../x"\nusage: exposure ${name} ${SPECS[name].synopsis}\n(\`exposure ${name} --help\` describes every flag)`,
      ]);
    }
  });

  it("leaves what follows -- alone", () => {
    expect(asksForHelp(["--", "--help"])).toBe(false);
    expect(asksForHelp(["--stack", "x", "-h"])).toBe(true);
  });
});

describe("did you mean", () => {
  it("counts typos: substitutions, insertions, deletions, transpositions", () => {
    expect(editDistance("status", "status")).toBe(0);
    expect(editDistance("stauts", "status")).toBe(1);
    expect(editDistance("statu", "status")).toBe(1);
    expect(editDistance("drfit", "drift")).toBe(1);
    expect(editDistance("kitten", "sitting")).toBe(3);
  });

  it("suggests only a near candidate", () => {
    expect(closest("stauts", ["status", "drift"])).toBe("status");
    expect(closest("rendr", ["render", "probe"])).toBe("render");
    expect(closest("acc", ["access", "check"])).toBe("access");
    // Found by an outside tester: the same name in another case got no suggestion.
    expect(closest("ARGOCD", ["grafana", "argocd"])).toBe("argocd");
    expect(closest("Status", ["status", "drift"])).toBe("status");
    expect(closest("deploy", ["status", "drift", "probe"])).toBeUndefined();
  });
});

describe("commandHelp", () => {
  it("lists every flag of the table, its placeholder, default and --help", () => {
    expect(commandHelp(spec)).toBe(
      [
        "usage: exposure demo --stack NAME [--timeout SECONDS] [--json]",
        "",
        "Does nothing.",
        "",
        "flags:",
        "  -s, --stack NAME       the stack",
        "      --timeout SECONDS  per call (default 5)",
        "      --json             machine output",
        "  -h, --help             show this help and exit",
        "",
        "exit codes: 0 ok",
      ].join("\n"),
    );
  });

  it("every command's synopsis names exactly the flags of its table", () => {
    for (const s of Object.values(SPECS) as CommandSpec[]) {
      const inSynopsis = new Set([...s.synopsis.matchAll(/--([a-z][a-z-]*)/g)].map((m) => m[1]));
      expect([...inSynopsis].sort(), s.name).toEqual(Object.keys(s.flags).sort());
    }
  });
});
