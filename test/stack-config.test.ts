import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { loadStackConfig, refuseEncryptedSettings } from "../src/adapters/stack-config";
import { openStack } from "../src/adapters/stack-inputs";

const projectDir = path.resolve(__dirname, "..");
const fixtureDir = path.join(__dirname, "data/stack-config");

let dirs: string[] = [];
afterEach(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
  dirs = [];
});

/** A project folder with these two files (relative paths in messages: cwd is the folder). */
function project(
  projectYaml: string | undefined,
  stackYaml: string,
  stack = "s",
): { dir: string; file: string; load: () => ReturnType<typeof loadStackConfig>; open: () => ReturnType<typeof openStack> } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "stack-config-"));
  dirs.push(dir);
  if (projectYaml !== undefined) fs.writeFileSync(path.join(dir, "Pulumi.yaml"), projectYaml);
  fs.writeFileSync(path.join(dir, `Pulumi.${stack}.yaml`), stackYaml);
  return {
    dir,
    /** The stack file as problems name it. */
    file: path.relative(process.cwd(), path.join(dir, `Pulumi.${stack}.yaml`)),
    load: () => {
      const cwd = process.cwd();
      process.chdir(dir);
      try {
        return loadStackConfig(dir, stack);
      } finally {
        process.chdir(cwd);
      }
    },
    open: () => openStack({ projectDir: dir, stack }),
  };
}

describe("stack configuration as the engine gives it", () => {
  // test/data/stack-config: Pulumi.yaml and Pulumi.agree.yaml made with the real CLI
  // (`pulumi config set [--secret|--path]`), pulumi-config.agree.json its `pulumi config --json --stack agree`.
  // The recorded Pulumi.yaml declares configuration, which the exposure commands refuse: the
  // agreement is on the stack file's keys, read with a Pulumi.yaml holding only the project's name.
  const engine = JSON.parse(fs.readFileSync(path.join(fixtureDir, "pulumi-config.agree.json"), "utf8")) as Record<string, { value?: string; secret: boolean }>;
  const recorded = () => project("name: ui-exposure\nruntime: nodejs\n", fs.readFileSync(path.join(fixtureDir, "Pulumi.agree.yaml"), "utf8"), "agree");

  it("agrees with `pulumi config --json` of Pulumi 3.248 on every key of the recorded stack file (namespaces, types, secret)", () => {
    const ours = recorded().load();
    // The four keys the recorded Pulumi.yaml alone gave (its defaults and values).
    const fromProject = ["kubernetes:context", "kubernetes:namespace", "ui-exposure:entries", "ui-exposure:portal"];
    const plain = Object.fromEntries(Object.entries(engine).flatMap(([k, v]) => (v.secret || fromProject.includes(k) ? [] : [[k, v.value]])));
    expect(ours.values).toEqual(plain);
    expect(ours.secretKeys).toEqual(["ui-exposure:token"]);
  });

  it("refuses a Pulumi.yaml that declares configuration, at its place, saying where the keys go", () => {
    expect(() => loadStackConfig(fixtureDir, "agree")).toThrow(
      /^.*Pulumi\.yaml:5:3: Pulumi\.yaml declares configuration, which the exposure commands do not read: set each key in the stack files instead \(pulumi config set KEY VALUE --stack NAME\)$/,
    );
    expect(project("name: ui-exposure\nconfig: {}\n", "config:\n  label: x\n").load().values).toEqual({ "ui-exposure:label": "x" });
  });

  it("never decrypts nor carries a secure value: the key is known, the ciphertext appears nowhere", () => {
    const ours = recorded().load();
    const ciphertext = /secure: (\S+)/.exec(fs.readFileSync(path.join(fixtureDir, "Pulumi.agree.yaml"), "utf8"))?.[1] as string;
    expect(ciphertext).toMatch(/^v1:/);
    expect(JSON.stringify(ours)).not.toContain(ciphertext);
    expect(ours.values).not.toHaveProperty("ui-exposure:token");
  });

  it("a secure value nested in an object hides the whole key", () => {
    const p = project("name: ui-exposure\nruntime: nodejs\n", "config:\n  ui-exposure:portal:\n    image: x\n    token:\n      secure: v1:abc\n");
    expect(p.load()).toMatchObject({ values: {}, secretKeys: ["ui-exposure:portal"] });
  });

  it("the exposure commands refuse an encrypted ui-exposure setting (it would read as unset: entries as 'all'); other namespaces' secrets are left out (found by an outside tester)", () => {
    const p = project(
      "name: ui-exposure\nruntime: nodejs\n",
      "config:\n  kubernetes:kubeconfig:\n    secure: v1:kube\n  ui-exposure:entries:\n    secure: v1:abc\n",
    );
    // What every command opens a stack with: the refusal, then the settings, in one reading of the file.
    const refused = (dir: string) => () => refuseEncryptedSettings(loadStackConfig(dir, "s"), "s");
    expect(p.open).toThrow("ui-exposure:entries is encrypted (secure:)");
    expect(refused(p.dir)).toThrow(
      [
        "invalid stack configuration for stack 's':",
        `${p.file}:4:3: ui-exposure:entries is encrypted (secure:), and the exposure commands never decrypt; ui-exposure settings hold nothing secret: set it in clear text (pulumi config set ui-exposure:entries VALUE --stack s, without --secret)`,
      ].join(" "),
    );
    const context = project("name: ui-exposure\nruntime: nodejs\n", "config:\n  kubernetes:context:\n    secure: v1:ctx\n");
    expect(refused(context.dir)).toThrow(
      "kubernetes:context is encrypted (secure:), and the exposure commands never decrypt; a context name holds nothing secret",
    );
    const clear = project("name: ui-exposure\nruntime: nodejs\n", "config:\n  kubernetes:kubeconfig:\n    secure: v1:kube\n  ui-exposure:entries: all\n");
    expect(refused(clear.dir)).not.toThrow();
    expect(loadStackConfig(clear.dir, "s").values).toEqual({ "ui-exposure:entries": "all" });
  });

  it("openStack: settings, contract and selection in one reading, and one error form for the CLI, the sandbox, render and the program alike", () => {
    const contract = path.join(projectDir, "contract/endpoints.example.yaml");
    const p = project(
      "name: ui-exposure\nruntime: nodejs\n",
      `config:\n  kubernetes:context: x\n  ui-exposure:cilium: {mode: cohabit}\n  ui-exposure:contract: ${contract}\n  ui-exposure:entries: [grafana, argocd]\n`,
    );
    const opened = p.open();
    expect(opened.selected).toEqual(["grafana", "argocd"]);
    expect(opened.config["ui-exposure:entries"]).toBe('["grafana","argocd"]');
    const wrong = project(
      "name: ui-exposure\nruntime: nodejs\n",
      `config:\n  kubernetes:context: x\n  ui-exposure:cilium: {mode: cohabit}\n  ui-exposure:contract: ${contract}\n  ui-exposure:entries: [grafna]\n`,
    );
    const message =
      "invalid stack configuration in Pulumi.s.yaml: ui-exposure:entries names 'grafna', which the contract does not declare (declared: argocd, grafana,";
    expect(wrong.open).toThrow(message);
    // The program's values come from the engine; the file still gives the positions.
    expect(() => openStack({ projectDir: wrong.dir, stack: "s", config: opened.config })).not.toThrow();
    expect(() => openStack({ projectDir: p.dir, stack: "../s" })).toThrow("--stack must be a stack name");
  });

  it("portal.clusters: one message per bad field, each at its place; a cluster named like the stack refused", () => {
    const contract = path.join(projectDir, "contract/endpoints.example.yaml");
    const clusters = "[{name: Prod, secret: cluster-prod}, {name: lab, secret: a}, {name: lab, secret: b}, {name: x}]";
    const p = project(
      "name: ui-exposure\nruntime: nodejs\n",
      `config:\n  kubernetes:context: bench\n  ui-exposure:cilium: {mode: cohabit}\n  ui-exposure:contract: ${contract}\n  ui-exposure:entries: [argocd]\n  ui-exposure:portal:\n    clusters: ${clusters}\n`,
      "lab",
    );
    const file = path.relative(process.cwd(), path.join(p.dir, "Pulumi.lab.yaml"));
    expect(() => openStack({ projectDir: p.dir, stack: "lab" })).toThrow(
      [
        "invalid stack configuration in Pulumi.lab.yaml (2 problems):",
        `  - ${file}:7:17: ui-exposure:portal.clusters[0].name: cluster name must be a DNS label: lowercase letters, digits and '-', starting and ending with a letter or digit, found a string ("Prod")`,
        `  - ${file}:7:100: ui-exposure:portal.clusters[3].secret: required setting is missing`,
      ].join("\n"),
    );
    const stackFile = (list: string) =>
      fs.writeFileSync(
        path.join(p.dir, "Pulumi.lab.yaml"),
        `config:\n  kubernetes:context: bench\n  ui-exposure:cilium: {mode: cohabit}\n  ui-exposure:contract: ${contract}\n  ui-exposure:entries: [argocd]\n  ui-exposure:portal:\n    clusters: ${list}\n`,
      );
    stackFile("[{name: prod, secret: a}, {name: prod, secret: b}]");
    expect(() => openStack({ projectDir: p.dir, stack: "lab" })).toThrow(
      `invalid stack configuration in Pulumi.lab.yaml: ${file}:7:5: ui-exposure:portal.clusters: each cluster needs its own name`,
    );
    stackFile("[{name: lab, secret: a}]");
    expect(() => openStack({ projectDir: p.dir, stack: "lab" })).toThrow(
      `invalid stack configuration in Pulumi.lab.yaml: ${file}:6:3: ui-exposure:portal.clusters: 'lab' is this stack's own name; give the other cluster another name`,
    );
  });

  it("a new stack learns every missing or wrong setting in one message, with the lines to add (issue 27 #4)", () => {
    const contract = path.join(projectDir, "contract/endpoints.example.yaml");
    const p = project(
      "name: ui-exposure\nruntime: nodejs\n",
      `config:\n  ui-exposure:contract: ${contract}\n  ui-exposure:entries: [argocd, nosuch]\n  ui-exposure:portal: {enabled: yes}\n`,
      "new",
    );
    const file = path.relative(process.cwd(), path.join(p.dir, "Pulumi.new.yaml"));
    expect(() => openStack({ projectDir: p.dir, stack: "new" })).toThrow(
      [
        "invalid stack configuration in Pulumi.new.yaml (4 problems):",
        `  - ${file}:4:24: ui-exposure:portal.enabled: expected a boolean, found a string ("yes")`,
        "  - ui-exposure:cilium: required setting is missing",
        "  - kubernetes:context is not set; set it (pulumi config set kubernetes:context <context> --stack new) so the stack never deploys to (or reads) whatever context is current",
        "  - ui-exposure:entries names 'nosuch', which the contract does not declare (declared: argocd, grafana, gitea, dagster, mlflow, marquez-web, k8s-dashboard, portal)",
        "add under 'config:' in Pulumi.new.yaml:",
        "  kubernetes:context: <context>        # the cluster's, from: kubectl config get-contexts -o name",
        "  ui-exposure:cilium:",
        "    mode: cohabit                      # Cilium stays as installed; to manage it (l4), see docs/cilium.md",
      ].join("\n"),
    );
    // The lines given, added as said, make a stack that opens.
    fs.writeFileSync(
      path.join(p.dir, "Pulumi.new.yaml"),
      `config:\n  kubernetes:context: bench\n  ui-exposure:cilium:\n    mode: cohabit\n  ui-exposure:contract: ${contract}\n  ui-exposure:entries: [argocd]\n`,
    );
    expect(openStack({ projectDir: p.dir, stack: "new" }).selected).toEqual(["argocd"]);
  });

  it("a settings problem starts with the position of its key in the stack file (found by a second outside tester)", () => {
    const p = project(
      "name: ui-exposure\nruntime: nodejs\n",
      "config:\n  kubernetes:context: x\n  ui-exposure:cilium: {mode: cohabit}\n  ui-exposure:entries: some\n  ui-exposure:entrys: [a]\n",
    );
    expect(p.open).toThrow(
      [
        "invalid stack configuration in Pulumi.s.yaml (2 problems):",
        `  - ${p.file}:4:3: ui-exposure:entries: expected 'all' or a list of entry names, found a string ("some")`,
        `  - ${p.file}:5:3: ui-exposure: unknown key 'entrys'`,
      ].join("\n"),
    );
  });

  it("an allowlist problem points at the item, not at the setting's key", () => {
    const p = project(
      "name: ui-exposure\nruntime: nodejs\n",
      "config:\n  ui-exposure:cilium: {mode: cohabit}\n  ui-exposure:allowlist:\n    hostPorts:\n      - kube-system/cilium-*:4244\n      - match: tools/debug-*:99999\n        reason: debugging\n",
    );
    expect(p.open).toThrow(
      `${p.file}:6:9: ui-exposure:allowlist.hostPorts[1].match: must end with a port number between 1 and 65535 ('namespace/pod-name-or-prefix*:port' or 'namespace/pod-name-or-prefix*:hostNetwork'), found a string ("tools/debug-*:99999")`,
    );
  });

  it("an allowlist past the guard's bound on the work per object is refused with one line naming the limit", () => {
    const items = (n: number) => Array.from({ length: n }, (_, i) => `      - other-${i}/agent-${i}-*:${1000 + i}\n`).join("");
    const stackFile = (n: number) =>
      `config:\n  kubernetes:context: x\n  ui-exposure:cilium: {mode: cohabit}\n  ui-exposure:allowlist:\n    hostPorts:\n${items(n)}`;
    // At the bound the settings are read (what stops here is the missing contract of this bare project).
    const atBound = project("name: ui-exposure\nruntime: nodejs\n", stackFile(500));
    expect(atBound.open).toThrow(/^contract file not found/);
    const past = project("name: ui-exposure\nruntime: nodejs\n", stackFile(501));
    expect(past.open).toThrow(
      `${past.file}:5:5: ui-exposure:allowlist.hostPorts: holds more than 500 items or 40,000 characters, the most the exposure guard checks within its bounded work: match several pods or Services with one prefix ('namespace/prefix*')`,
    );
    // Fewer items, longer patterns: the characters count too.
    const long = Array.from({ length: 130 }, (_, i) => `      - ${"n".repeat(60)}/${"p".repeat(240)}-${i}-*:${1000 + i}\n`).join("");
    const wordy = project(
      "name: ui-exposure\nruntime: nodejs\n",
      `config:\n  kubernetes:context: x\n  ui-exposure:cilium: {mode: cohabit}\n  ui-exposure:allowlist:\n    hostPorts:\n${long}`,
    );
    expect(wordy.open).toThrow("ui-exposure:allowlist.hostPorts: holds more than 500 items or 40,000 characters");
  });

  it("settings problems come in the order of their keys in the stack file, not the schema's (issue 23, item 9)", () => {
    const p = project(
      "name: ui-exposure\nruntime: nodejs\n",
      "config:\n  kubernetes:context: x\n  ui-exposure:cilium: {mode: bogus}\n  ui-exposure:nodeAddress: nowhere\n  ui-exposure:entries: some\n",
    );
    let message = "";
    try {
      p.open();
    } catch (err) {
      message = (err as Error).message;
    }
    const lines = message.split("\n").filter((l) => l.startsWith("  - "));
    expect(lines.map((l) => /:(\d+:\d+): ui-exposure:(\w+)/.exec(l)?.slice(1))).toEqual([
      ["3:24", "cilium"],
      ["4:3", "nodeAddress"],
      ["5:3", "entries"],
    ]);
    // The wrong value inside the setting is pointed at (`mode: bogus`), not the setting's key.
    expect(lines[0]).toContain(`${p.file}:3:24: ui-exposure:cilium.mode:`);
  });

  it("the shipped stacks read as before (every key namespaced, objects as JSON)", () => {
    const bench = loadStackConfig(projectDir, "bench").values;
    expect(bench["kubernetes:context"]).toBeDefined();
    expect(JSON.parse(bench["ui-exposure:cilium"] as string)).toMatchObject({ mode: "l4" });
    for (const key of Object.keys(bench)) expect(key).toMatch(/^[a-z-]+:[A-Za-z0-9.-]+$/);
  });

  it("without Pulumi.yaml, the stack file alone", () => {
    const p = project(undefined, "config:\n  label: x\n");
    expect(p.load().values).toEqual({ "ui-exposure:label": "x" });
  });
});

describe("positioned errors", () => {
  it("invalid YAML: file:line:col", () => {
    const p = project("name: ui-exposure\nruntime: nodejs\n", "config:\n  ui-exposure:entries: [a, b\n");
    expect(p.load).toThrow(/^Pulumi\.s\.yaml:\d+:\d+: invalid YAML: /);
  });

  it("a duplicated key is refused where it is", () => {
    const p = project("name: ui-exposure\nruntime: nodejs\n", "config:\n  ui-exposure:a: x\n  ui-exposure:a: y\n");
    expect(p.load).toThrow(/^Pulumi\.s\.yaml:3:\d+: invalid YAML: duplicate key 'ui-exposure:a': map keys must be unique$/);
  });

  it("config that is not a mapping", () => {
    const p = project("name: ui-exposure\nruntime: nodejs\n", "config:\n  - a\n");
    expect(p.load).toThrow("Pulumi.s.yaml:2:3: 'config' must be a mapping of keys to values");
  });

  it("a key without value, a malformed key", () => {
    expect(project("name: ui-exposure\nruntime: nodejs\n", "config:\n  ui-exposure:entries:\n").load).toThrow(
      "Pulumi.s.yaml:2:3: ui-exposure:entries has no value (remove the key or give it one)",
    );
    expect(project("name: ui-exposure\nruntime: nodejs\n", "config:\n  a:b:c: x\n").load).toThrow(
      "Pulumi.s.yaml:2:3: configuration key 'a:b:c' must be 'name' or 'namespace:name'",
    );
  });

  it("an unknown stack names the known ones", () => {
    const p = project("name: ui-exposure\nruntime: nodejs\n", "config: {}\n", "known");
    expect(() => loadStackConfig(p.dir, "nope")).toThrow(/unknown stack 'nope': no .*Pulumi\.nope\.yaml \(stacks: known\)/);
  });
});
