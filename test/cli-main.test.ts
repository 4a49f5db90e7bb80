import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { main } from "../cli/main";
import { COMMAND_NAMES, SPECS } from "../cli/specs";
import { capture } from "./support/command-helpers";

const projectDir = path.resolve(__dirname, "..");

async function exposure(...argv: string[]) {
  const c = capture(projectDir);
  const code = await main(argv, c.ctx);
  return { code, out: c.out.join("\n"), err: c.err.join("\n") };
}

describe("exposure (help, version, dispatch)", () => {
  it("--help lists every command with its summary, and says how to get a command's help", async () => {
    const r = await exposure("--help");
    expect(r.code).toBe(0);
    for (const name of COMMAND_NAMES) expect(r.out).toMatch(new RegExp(`^  ${name} +${SPECS[name].summary.replace(/[()|+*?.[\]]/g, "\\$&")}$`, "m"));
    expect(r.out).toContain("`exposure <command> --help` (or `exposure help <command>`)");
  });

  it("<command> --help and help <command> print the same help, listing every flag, exit 0 and run nothing", async () => {
    for (const name of COMMAND_NAMES) {
      const flagHelp = await exposure(name, "--help");
      const helpCommand = await exposure("help", name);
      expect(flagHelp.code, name).toBe(0);
      expect(helpCommand.out).toBe(flagHelp.out);
      expect(flagHelp.out.split("\n")[0]).toBe(`usage: exposure ${name} ${SPECS[name].synopsis}`.trimEnd());
      for (const flag of Object.keys(SPECS[name].flags)) expect(flagHelp.out, `${name} --${flag}`).toMatch(new RegExp(`--${flag}\\b`));
      expect(flagHelp.out).toContain("-h, --help");
    }
    // --help wins over missing required flags: status would need --stack and a cluster.
    expect((await exposure("status", "-h")).code).toBe(0);
  });

  it("--version prints package.json's version", async () => {
    const { version } = JSON.parse(fs.readFileSync(path.join(projectDir, "package.json"), "utf8")) as { version: string };
    expect(await exposure("--version")).toEqual({ code: 0, out: `exposure ${version}`, err: "" });
  });

  it("`exposure version` prints the version too; `-V` as well (issue 23, item 9)", async () => {
    const { version } = JSON.parse(fs.readFileSync(path.join(projectDir, "package.json"), "utf8")) as { version: string };
    expect(await exposure("version")).toEqual({ code: 0, out: `exposure ${version}`, err: "" });
    expect(await exposure("-V")).toEqual({ code: 0, out: `exposure ${version}`, err: "" });
    expect((await exposure("version", "--bogus")).code).toBe(2);
    expect((await exposure("--help")).out).toContain("`exposure version` (or --version) prints the version");
  });

  it("-o json and --output json (kubectl's habit) point at --json (issue 23, item 9)", async () => {
    for (const argv of [["-o", "json"], ["-ojson"], ["--output", "json"], ["--output=json"], ["-o", "yaml"]]) {
      const r = await exposure("status", "--stack", "bench", ...argv);
      expect(r.code, argv.join(" ")).toBe(2);
      expect(r.err.split("\n")[0], argv.join(" ")).toBe(
        `exposure status: unknown flag '${argv[0]?.startsWith("--") ? "--output" : "-o"}': for JSON output, use --json`,
      );
    }
    // A command without --json gets no such hint.
    expect((await exposure("schema", "-o", "json")).err.split("\n")[0]).toBe("exposure schema: unknown flag '-o'");
  });

  it("access --help lists exit code 5, and says where the .env may go with git (issue 23, item 9)", async () => {
    const help = (await exposure("access", "--help")).out;
    expect(help).toMatch(/^exit codes: .*\b5 a credential could not be read/m);
    expect(help).toContain("never inside a .git folder");
    expect(help).toContain("inside a git work tree only where git ignores it");
  });

  it("a mistyped command gets the closest one, exit 2", async () => {
    expect(await exposure("stauts")).toEqual({
      code: 2,
      out: "",
      err: "exposure: unknown command 'stauts': did you mean 'status'?\n(`exposure --help` lists the commands)",
    });
    expect((await exposure("deploy")).err.split("\n")[0]).toBe("exposure: unknown command 'deploy'");
    expect((await exposure("help", "chek")).err.split("\n")[0]).toBe("exposure: unknown command 'chek': did you mean 'check'?");
    expect((await exposure("--verbose")).err.split("\n")[0]).toBe("exposure: unknown flag '--verbose'");
  });

  it("a mistyped flag gets the closest one before the command's module loads, exit 2", async () => {
    const r = await exposure("status", "--stack", "bench", "--jsno");
    expect(r.code).toBe(2);
    expect(r.err.split("\n")[0]).toBe("exposure status: unknown flag '--jsno': did you mean '--json'?");
  });

  it("no command prints the help on stderr, exit 2", async () => {
    const r = await exposure();
    expect(r.code).toBe(2);
    expect(r.err).toContain("usage: exposure <command>");
  });
});

/** The `--flags` written after `exposure <command>` on a line of documentation (other tools' flags cut off). */
function documentedFlags(line: string, command: string): string[] {
  const at = line.indexOf(`exposure ${command}`);
  const rest = line.slice(at + `exposure ${command}`.length).split(/ #|<\(| \| |&&|;|`/)[0] ?? "";
  return [...rest.matchAll(/(?<![\w-])--([a-z][a-z-]*)/g)].map((m) => m[1] as string);
}

describe("the documentation agrees with the CLI's own help", () => {
  it("docs/commands.md: each command's usage block is the CLI's usage line", () => {
    const doc = fs.readFileSync(path.join(projectDir, "docs/commands.md"), "utf8");
    for (const name of COMMAND_NAMES) {
      const section = doc.split(/^## /m).find((s) => s.startsWith(`${name}\n`));
      expect(section, `docs/commands.md has no '## ${name}' section`).toBeDefined();
      const block = /```\n([\s\S]*?)```/.exec(section ?? "")?.[1] ?? "";
      expect(block.replace(/\s+/g, " ").trim(), `docs/commands.md usage of ${name}`).toBe(`exposure ${name} ${SPECS[name].synopsis}`.trim());
    }
  });

  it("README and docs/commands.md name no flag a command lacks, and README lists every command", () => {
    const problems: string[] = [];
    for (const file of ["README.md", "docs/commands.md"]) {
      const text = fs.readFileSync(path.join(projectDir, file), "utf8");
      text.split("\n").forEach((line, i) => {
        for (const m of line.matchAll(/exposure ([a-z]+)/g)) {
          const name = m[1] as string;
          if (!Object.hasOwn(SPECS, name)) continue;
          const flags = SPECS[name as keyof typeof SPECS].flags;
          for (const flag of documentedFlags(line.slice(m.index), name)) {
            if (flag !== "help" && !Object.hasOwn(flags, flag)) problems.push(`${file}:${i + 1}: exposure ${name} has no --${flag}`);
          }
        }
      });
    }
    expect(problems).toEqual([]);
    const readme = fs.readFileSync(path.join(projectDir, "README.md"), "utf8");
    for (const name of COMMAND_NAMES) expect(readme, `README.md never shows exposure ${name}`).toContain(`exposure ${name}`);
  });
});
