// biome-ignore-all lint/suspicious/noTemplateCurlyInString: these strings are shell words, ${...} is shell syntax
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bashScript, entryNames, stackNames, zshScript } from "../cli/commands/completion";
import { main } from "../cli/main";
import { COMMAND_NAMES, SPECS } from "../cli/specs";
import { capture, makeProject, stackFile, type TestProject } from "./support/command-helpers";

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
function bashComplete(line: string, where: { cwd: string; bin: string } = { cwd: project.dir, bin: fakeBin }): string[] {
  const words = line.split(" ");
  const script = `${bashScript()}
COMP_WORDS=(${words.map((w) => `'${w}'`).join(" ")})
COMP_CWORD=$(( \${#COMP_WORDS[@]} - 1 ))
${words[0] === "npx" ? "_exposure_npx" : "_exposure"}
printf '%s\\n' "\${COMPREPLY[@]}"`;
  const r = spawnSync("bash", ["--norc", "-c", script], { encoding: "utf8", cwd: where.cwd, env: { PATH: `${where.bin}:${process.env.PATH}` } });
  expect(r.stderr).toBe("");
  return r.stdout.split("\n").filter(Boolean);
}

const hasZsh = spawnSync("zsh", ["-c", "true"]).status === 0;
if (!hasZsh) console.warn("!! zsh is not installed (apt-get install zsh): the zsh completion runs are SKIPPED");

/** What the zsh script offers for `line`: compadd (a completion-widget builtin) stood in for by a printer. */
function zshComplete(line: string, where: { cwd: string; bin: string }): string[] {
  const words = line.split(" ");
  const script = `compdef() { : }
compadd() { [[ $1 == -- ]] && shift; print -rl -- "$@" }
_files() { print -r -- "<files>" }
${zshScript()}
words=(${words.map((w) => `'${w}'`).join(" ")})
CURRENT=${words.length}
${words[0] === "npx" ? "_exposure_npx" : "_exposure"}`;
  const r = spawnSync("zsh", ["-f", "-c", script], { encoding: "utf8", cwd: where.cwd, env: { PATH: `${where.bin}:${process.env.PATH}` } });
  expect(r.stderr).toBe("");
  return r.stdout.split("\n").filter(Boolean);
}

describe.skipIf(!hasZsh)("zsh runs the script as generated", () => {
  it("completes stacks through exposure, npx exposure and an alias, and never expands a listed word", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "exposure-zsh-"));
    const bin = fs.mkdtempSync(path.join(os.tmpdir(), "exposure-bin-"));
    const npxOnly = fs.mkdtempSync(path.join(os.tmpdir(), "exposure-npx-"));
    try {
      const hostile = `printf '%s\\n' 'bench' 'b$(touch\${IFS}X)' 'b\`touch Y\`'\n`;
      fs.writeFileSync(path.join(bin, "exposure"), `#!/bin/sh\n${hostile}`, { mode: 0o755 });
      fs.writeFileSync(path.join(npxOnly, "npx"), `#!/bin/sh\n[ "$*" = "--no-install exposure completion --list stacks" ] && ${hostile}exit 0\n`, {
        mode: 0o755,
      });
      // compadd is given the words as they are (it quotes them when inserting): nothing ran.
      const listed = ["bench", "b$(touch${IFS}X)", "b`touch Y`"];
      expect(zshComplete("exposure status --stack ", { cwd: dir, bin })).toEqual(listed);
      expect(zshComplete("npx exposure status --stack ", { cwd: dir, bin: npxOnly })).toEqual(listed);
      expect(zshComplete("exposure status --stack ", { cwd: dir, bin: npxOnly })).toEqual(listed);
      expect(zshComplete("npx exposure st", { cwd: dir, bin: npxOnly })).toContain("status");
      expect(zshComplete("npx ", { cwd: dir, bin: npxOnly })).toEqual(["exposure"]);
      expect(fs.readdirSync(dir)).toEqual([]);
    } finally {
      for (const d of [dir, bin, npxOnly]) fs.rmSync(d, { recursive: true, force: true });
    }
  });
});

describe("completion through npx exposure, or an alias of it (issue 23, item 9)", () => {
  it("bash completes `npx exposure ...` and asks `npx --no-install exposure` for the names", () => {
    const bin = fs.mkdtempSync(path.join(os.tmpdir(), "exposure-npx-"));
    try {
      // No `exposure` on PATH: only npx knows it (the project's own bin).
      fs.writeFileSync(
        path.join(bin, "npx"),
        `#!/bin/sh\n[ "$*" = "--no-install exposure completion --list stacks" ] && printf 'bench\\ndirqual\\n'\nexit 0\n`,
        { mode: 0o755 },
      );
      const where = { cwd: project.dir, bin };
      expect(bashComplete("npx exp", where)).toEqual(["exposure"]);
      expect(bashComplete("npx exposure st", where)).toEqual(["status"]);
      expect(bashComplete("npx exposure status --stack d", where)).toEqual(["dirqual"]);
      expect(bashComplete("npx other --stack ", where)).toEqual([]);
      // `alias exposure='npx exposure'`: the word typed is exposure, which is no program here.
      expect(bashComplete("exposure drift --stack ", where)).toEqual(["bench", "dirqual"]);
    } finally {
      fs.rmSync(bin, { recursive: true, force: true });
    }
  });
});

describe("completion never runs a command hidden in a file name or a listed word (issue 23, defect 2)", () => {
  it("bash, with the real exposure, in a folder holding Pulumi.$(touch${IFS}X).yaml: offers the stack names only, runs nothing", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "exposure-hostile-"));
    const bin = fs.mkdtempSync(path.join(os.tmpdir(), "exposure-bin-"));
    try {
      fs.writeFileSync(path.join(dir, "Pulumi.yaml"), "name: ui-exposure\nruntime: nodejs\n");
      for (const name of ["bench", "$(touch${IFS}X)", "`touch Y`", "a;touch Z", "b*"]) fs.writeFileSync(path.join(dir, `Pulumi.${name}.yaml`), "config: {}\n");
      fs.writeFileSync(path.join(bin, "exposure"), `#!/bin/sh\nexec "${process.execPath}" "${path.resolve("bin/exposure.cjs")}" "$@"\n`, { mode: 0o755 });
      const offered = bashComplete("exposure status --stack ", { cwd: dir, bin });
      expect(fs.readdirSync(dir).filter((f) => !f.startsWith("Pulumi."))).toEqual([]);
      expect(offered).toEqual(["bench"]);
      expect(bashComplete("exposure drift -s ", { cwd: dir, bin })).toEqual(["bench"]);
      expect(stackNames(dir)).toEqual(["bench"]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
      fs.rmSync(bin, { recursive: true, force: true });
    }
  });

  it("bash never expands a word it is given: a lister printing $(...), backticks and globs creates nothing and offers plain words only", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "exposure-hostile-"));
    const bin = fs.mkdtempSync(path.join(os.tmpdir(), "exposure-bin-"));
    try {
      fs.writeFileSync(path.join(dir, "file-a"), "");
      fs.writeFileSync(path.join(bin, "exposure"), `#!/bin/sh\nprintf '%s\\n' 'b$(touch\${IFS}X)' 'b\`touch Y\`' 'b*' 'b;touch Z' 'bench' 'b\${IFS}x'\n`, {
        mode: 0o755,
      });
      const offered = bashComplete("exposure status --stack b", { cwd: dir, bin });
      expect(fs.readdirSync(dir)).toEqual(["file-a"]);
      expect(offered).toEqual(["bench"]);
      expect(bashComplete("exposure status --entry ", { cwd: dir, bin })).toEqual(["bench"]);
      expect(fs.readdirSync(dir)).toEqual(["file-a"]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
      fs.rmSync(bin, { recursive: true, force: true });
    }
  });
});

describe("exposure completion", () => {
  it("bash completes commands, each command's flags, stack names and fixed values", () => {
    expect(bashComplete("exposure ")).toEqual([...COMMAND_NAMES, "help", "version", "--help", "--version"]);
    expect(bashComplete("exposure st")).toEqual(["status"]);
    expect(bashComplete("exposure status --")).toEqual(["--stack", "--all-stacks", "--entry", "--outputs", "--timeout", "--json", "--help"]);
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
      expect(branch, name).toContain('        --entry) compadd -- ${(f)"$(_exposure_run completion --list entries)"}; return ;;');
      expect(branch.at(-2), name).toMatch(/^ {6}compadd -- .*--entry /);
    }
  });

  it("every flag of every command is in both scripts", () => {
    const bash = bashScript();
    const zsh = zshScript();
    expect(zsh.split("\n")[0]).toBe("#compdef exposure npx");
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
    expect(await main(["completion", "bash"], c.ctx)).toBe(0);
    expect(c.out.join("\n")).toBe(bashScript());
    const fish = capture(project.dir);
    expect(await main(["completion", "fish"], fish.ctx)).toBe(2);
    // The shell was named: the message says it is not one of those supported (issue 23, item 9).
    expect(fish.err[0]?.split("\n")[0]).toBe("exposure completion: no completion for 'fish': bash or zsh");
    const none = capture(project.dir);
    expect(await main(["completion"], none.ctx)).toBe(2);
    expect(none.err[0]?.split("\n")[0]).toBe("exposure completion: name the shell: bash or zsh");
    const list = capture(project.dir);
    expect(await main(["completion", "--list", "stacks"], list.ctx)).toBe(0);
    expect(list.out).toEqual(["bench", "dirqual"]);
  });

  it("the bash script is valid bash", () => {
    const r = spawnSync("bash", ["-n"], { input: bashScript(), encoding: "utf8" });
    expect(r.status).toBe(0);
  });
});
