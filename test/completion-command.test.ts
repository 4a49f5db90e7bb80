import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bashScript, completion, entryNames, stackNames, zshScript } from "../cli/commands/completion";
import { main } from "../cli/main";
import { COMMAND_NAMES, SPECS } from "../cli/specs";
import { capture, makeProject, stackFile, type TestProject } from "./command-helpers";

let project: TestProject;
let fakeBin: string;
beforeAll(() => {
  project = makeProject({ bench: stackFile(), dirqual: stackFile() });
  // The script asks `exposure completion --list ...` while completing: a stand-in answers from this project.
  fakeBin = fs.mkdtempSync(path.join(os.tmpdir(), "exposure-completion-"));
  fs.writeFileSync(
    path.join(fakeBin, "exposure"),
    `#!/bin/sh\n[ "$1 $2 $3" = "completion --list stacks" ] && printf 'bench\\ndirqual\\n'\n[ "$1 $2 $3" = "completion --list entries" ] && printf 'argocd\\ngitea\\n'\nexit 0\n`,
    { mode: 0o755 },
  );
});
afterAll(() => {
  project.remove();
  fs.rmSync(fakeBin, { recursive: true, force: true });
});

/** What bash offers after typing `line` (the cursor at its end), through the generated script. */
function bashComplete(line: string): string[] {
  const script = `${bashScript()}
COMP_WORDS=(${line
    .split(" ")
    .map((w) => `'${w}'`)
    .join(" ")})
COMP_CWORD=$(( \${#COMP_WORDS[@]} - 1 ))
_exposure
printf '%s\\n' "\${COMPREPLY[@]}"`;
  const r = spawnSync("bash", ["--norc", "-c", script], { encoding: "utf8", cwd: project.dir, env: { PATH: `${fakeBin}:${process.env.PATH}` } });
  expect(r.stderr).toBe("");
  return r.stdout.split("\n").filter(Boolean);
}

describe("exposure completion", () => {
  it("bash completes commands, each command's flags, stack names and fixed values", () => {
    expect(bashComplete("exposure ")).toEqual([...COMMAND_NAMES, "help", "--help", "--version"]);
    expect(bashComplete("exposure st")).toEqual(["status"]);
    expect(bashComplete("exposure status --")).toEqual(["--stack", "--entry", "--outputs", "--timeout", "--json", "--help"]);
    expect(bashComplete("exposure drift --stack ")).toEqual(["bench", "dirqual"]);
    expect(bashComplete("exposure status -s d")).toEqual(["dirqual"]);
    expect(bashComplete("exposure render --format j")).toEqual(["json"]);
    expect(bashComplete("exposure completion ")).toEqual(["bash", "zsh"]);
    expect(bashComplete("exposure help pr")).toEqual(["probe", "portal"].filter((c) => c.startsWith("pr")));
  });

  it("bash completes the contract's entry names after --entry of status and probe", () => {
    expect(bashComplete("exposure status --stack bench --entry ")).toEqual(["argocd", "gitea"]);
    expect(bashComplete("exposure status --entry argocd --entry g")).toEqual(["gitea"]);
    expect(bashComplete("exposure probe --entry a")).toEqual(["argocd"]);
    expect(bashComplete("exposure probe --ent")).toEqual(["--entry"]);
    // Elsewhere a value after a flag is not an entry name.
    expect(bashComplete("exposure drift --stack ")).toEqual(["bench", "dirqual"]);
  });

  it("zsh completes the contract's entry names after --entry of status and probe", () => {
    const zsh = zshScript().split("\n");
    for (const name of ["status", "probe"]) {
      // The command's branch of `case "$cmd"`: from `    <name>)` to its `;;`.
      const start = zsh.indexOf(`    ${name})`);
      const end = zsh.indexOf("      ;;", start);
      const branch = zsh.slice(start, end + 1);
      expect(start, name).toBeGreaterThan(0);
      // biome-ignore lint/suspicious/noTemplateCurlyInString: zsh parameter expansion, not a template
      expect(branch, name).toContain('        --entry) compadd -- ${(f)"$(${words[1]} completion --list entries 2>/dev/null)"}; return ;;');
      expect(branch.at(-2), name).toMatch(/^ {6}compadd -- .*--entry /);
    }
  });

  it("every flag of every command is in both scripts", () => {
    const bash = bashScript();
    const zsh = zshScript();
    expect(zsh.split("\n")[0]).toBe("#compdef exposure");
    for (const name of COMMAND_NAMES) {
      for (const flag of Object.keys(SPECS[name].flags)) {
        expect(bash, `${name} --${flag}`).toMatch(new RegExp(`--${flag}\\b`));
        expect(zsh, `${name} --${flag}`).toMatch(new RegExp(`--${flag}\\b`));
      }
    }
  });

  it("--list gives the project's stacks and the contract's exposed entry names; a broken contract gives none", async () => {
    expect(stackNames(project.dir)).toEqual(["bench", "dirqual"]);
    // Only exposed entries can be published: the in-cluster-only ones (postgres, registry, ...) are not offered.
    const { loadContractFile, defaultContractPath } = await import("../src/adapters/contract-file.js");
    const contract = loadContractFile(defaultContractPath(project.dir));
    expect(contract.endpoints.some((e) => !e.exposed)).toBe(true);
    expect(await entryNames(project.dir)).toEqual(contract.endpoints.filter((e) => e.exposed).map((e) => e.name));
    const broken = fs.mkdtempSync(path.join(os.tmpdir(), "exposure-broken-"));
    fs.mkdirSync(path.join(broken, "contract"));
    fs.writeFileSync(path.join(broken, "contract", "endpoints.yaml"), "version: [");
    expect(await entryNames(broken)).toEqual([]);
    fs.rmSync(broken, { recursive: true, force: true });
  });

  it("prints the script for bash or zsh, and refuses another shell with exit 2", async () => {
    const c = capture(project.dir);
    expect(await completion(["bash"], c.ctx)).toBe(0);
    expect(c.out.join("\n")).toBe(bashScript());
    const fish = capture(project.dir);
    expect(await main(["completion", "fish"], fish.ctx)).toBe(2);
    expect(fish.err[0]?.split("\n")[0]).toBe("exposure completion: name the shell: bash or zsh");
    const list = capture(project.dir);
    expect(await main(["completion", "--list", "stacks"], list.ctx)).toBe(0);
    expect(list.out).toEqual(["bench", "dirqual"]);
  });

  it("the bash script is valid bash", () => {
    const r = spawnSync("bash", ["-n"], { input: bashScript(), encoding: "utf8" });
    expect(r.status).toBe(0);
  });
});
