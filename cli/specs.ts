// The registry of commands: flags, usage and help as data, read by the parser, `--help`, completion, the build (scripts/build.cjs)
// and the docs test. Loading it costs nothing, so `--help` never loads a command's module.
import type { CommandSpec, FlagSpec } from "./flags";

const stack = {
  type: "string",
  short: "s",
  value: "NAME",
  description: "the stack (Pulumi.<NAME>.yaml in the project)",
  complete: "stack",
} as const satisfies FlagSpec;
const stacks = {
  ...stack,
  multiple: true,
  description: "the stack (Pulumi.<NAME>.yaml in the project); repeatable: one table over several stacks, exit code the worst of theirs",
} as const satisfies FlagSpec;
const allStacks = {
  type: "boolean",
  description: "every stack of the project (each Pulumi.<NAME>.yaml in it), as if each were given with --stack",
} as const satisfies FlagSpec;
const json = { type: "boolean", description: "print one JSON document (with apiVersion) instead of the human report" } as const satisfies FlagSpec;
const timeout = { type: "string", value: "SECONDS", description: "how long each Kubernetes API call may take", default: "5" } as const satisfies FlagSpec;
const outputs = {
  type: "string",
  value: "FILE",
  description: "read the stack outputs from this file (saved `pulumi stack output --json`) instead of the Pulumi CLI",
  complete: "file",
} as const satisfies FlagSpec;
const entry = {
  type: "string",
  value: "NAME",
  multiple: true,
  description: "report only this entry (one the stack publishes), and derive the exit code from it alone",
  complete: "entry",
} as const satisfies FlagSpec;
const contract = { type: "string", value: "FILE", complete: "file" } as const satisfies Omit<FlagSpec, "description">;

const TABLE = {
  check: {
    brief: true,
    bundle: true,
    summary: "validate a contract offline (exit 0, or 2 with every problem)",
    synopsis: "[CONTRACT] [--json]",
    description: [
      "Validates a contract offline: every problem is listed with file:line:col and the field.",
      "CONTRACT defaults to contract/endpoints.yaml, else contract/endpoints.example.yaml.",
    ],
    positional: { name: "CONTRACT", description: "the contract file to check", complete: "file" },
    flags: { json: { ...json, description: "print one JSON document (with apiVersion); an invalid contract gives its problems as findings" } },
    exits: "0 valid, 2 invalid contract or usage",
  },
  render: {
    summary: "show what a stack would create, offline, from a cluster snapshot",
    synopsis: "--stack NAME --cluster SNAPSHOT [--contract FILE] [--json | --format yaml|json]",
    description: [
      "Runs the real program under Pulumi's mocks against a cluster snapshot and prints the objects, Helm releases and outputs the stack would produce (YAML by default).",
    ],
    flags: {
      stack,
      cluster: {
        type: "string",
        value: "SNAPSHOT",
        description: "`kubectl get svc,nodes,pods,cm,endpointslices -A -o yaml` output (a List)",
        complete: "file",
      },
      contract: { ...contract, description: "render this contract instead of the stack's" },
      json,
      format: { type: "string", value: "yaml|json", description: "yaml (default), or json: the same as --json", complete: ["yaml", "json"] },
    },
    exits: "0 ok, 1 the stack cannot be deployed, 2 invalid contract or usage",
  },
  status: {
    bundle: true,
    summary: "live verdict per entry: MATCH, DRIFT (with the reason) or ABSENT (exit 3 unless all MATCH)",
    synopsis: "(--stack NAME... | --all-stacks) [--entry NAME]... [--outputs FILE] [--timeout SECONDS] [--json]",
    description: [
      "Re-observes the cluster and gives every published entry its verdict: MATCH, DRIFT (with every reason) or ABSENT.",
      "Compares with the outputs of the last `pulumi up` when they can be read (Pulumi CLI, or --outputs).",
    ],
    flags: { stack: stacks, "all-stacks": allStacks, entry, outputs, timeout, json },
    exits: "0 every entry MATCH, 3 DRIFT or ABSENT, 1 error, 2 invalid contract or usage (several stacks: the worst of theirs)",
  },
  drift: {
    bundle: true,
    summary: "pulumi preview --expect-no-changes + cluster-wide audit of NodePort/LoadBalancer/hostPort exposure (exit 3 on drift)",
    synopsis: "--stack NAME [--skip-preview] [--timeout SECONDS] [--json]",
    description: [
      "Runs `pulumi preview --refresh --expect-no-changes` and, concurrently, audits every NodePort/LoadBalancer Service and hostPort of the cluster against the contract and the stack's allowlist.",
      "Also lists what the exposure guard in deny mode would refuse of what exists now (Services, Pods, workloads): switch a stack to deny only when that list is empty.",
    ],
    flags: { stack, "skip-preview": { type: "boolean", description: "run the cluster audit alone (no Pulumi CLI needed)" }, timeout, json },
    exits: "0 no drift, 3 changes or undeclared exposure, 1 the preview or the cluster read failed, 2 invalid contract or usage",
  },
  probe: {
    bundle: true,
    summary: "HTTP(S) GET every published URL with the contract's expectations (exit 4 if one fails)",
    synopsis: "(--stack NAME... | --all-stacks | --outputs FILE [--contract FILE]) [--entry NAME]... [--timeout SECONDS] [--concurrency N] [--json]",
    description: [
      "One GET per URL of the stack's `urls` output, with the contract's probe path and expected statuses (default / and any 2xx/3xx). Redirects are not followed; https certificates are not verified.",
    ],
    flags: {
      stack: stacks,
      "all-stacks": allStacks,
      outputs,
      contract: { ...contract, description: "the contract for probe paths and statuses, with --outputs (default: the project's)" },
      entry: { ...entry, description: "probe only this entry's URL, and derive the exit code from it alone; it must be in the `urls` output" },
      timeout: { ...timeout, description: "per request (an entry's probe.timeoutSeconds wins)" },
      concurrency: { type: "string", value: "N", description: "requests in flight at once (at most 64)", default: "8" },
      json,
    },
    exits: "0 every URL answered as expected, 4 one did not, 1 no URLs to probe, 2 usage (several stacks: the worst of theirs)",
  },
  access: {
    bundle: true,
    summary: "developer access: URLs, credentials on one screen, .env.cluster.local, SSH forwards (--forward/--stop)",
    synopsis: "--stack NAME [--dotenv PATH | --no-dotenv] [--forward [--lima-instance NAME] | --stop] [--show-secrets] [--timeout SECONDS] [--json]",
    description: [
      "Everything a data developer needs: the UIs' URLs (observed live), the contract's credentials read from their Secrets, a .env for the data repository (0600; inside a git work tree only where git ignores it, never inside a .git folder) and, on the Lima bench, SSH forwards.",
    ],
    flags: {
      stack,
      dotenv: {
        type: "string",
        value: "PATH",
        description:
          "where to write the .env (default $EXPOSURE_ENV_FILE, else ../atlas/.env.cluster.local): inside a git work tree only where git ignores it, never inside a .git folder",
        complete: "file",
      },
      "no-dotenv": { type: "boolean", description: "do not write the .env" },
      forward: { type: "boolean", description: "open one SSH forward per published UI (Lima VM network not routable from the host)" },
      stop: { type: "boolean", description: "end the stack's SSH forwards" },
      "lima-instance": {
        type: "string",
        value: "NAME",
        description: "the Lima instance, with --forward (default $LIMA_INSTANCE, else lima-<name> from the kube context)",
      },
      "show-secrets": { type: "boolean", description: "print passwords even when stdout is not a terminal" },
      timeout,
      json: { ...json, description: "print one JSON document (with apiVersion): it holds the passwords, marked as secrets" },
    },
    exits: "0 ok, 1 error (cluster, .env path, a forward that failed), 2 invalid contract or usage, 5 a credential could not be read (the rest is shown)",
  },
  portal: {
    summary: "serve the live portal page (URLs + MATCH/DRIFT) on this machine, until Ctrl-C",
    synopsis: "[--stack NAME... | --all-stacks] [--outputs FILE] [--listen HOST:PORT] [--contract FILE] [--json]",
    description: [
      "Serves the portal page on this machine, reading the cluster through the stack's kube context (the current context without --stack), until Ctrl-C.",
      "With --stack its verdicts are `exposure status`'s: it compares with the outputs of the last `pulumi up` (Pulumi CLI, read again every 30 s, or --outputs, read with every cluster read).",
      "Several stacks (--stack repeated, or --all-stacks): one page, each stack read through its own kube context on its own schedule; a stack whose cluster stops answering keeps its last rows, marked stale.",
    ],
    flags: {
      stack: stacks,
      "all-stacks": allStacks,
      outputs: { ...outputs, description: `with --stack: ${outputs.description}` },
      listen: { type: "string", value: "HOST:PORT", description: "where to listen", default: "127.0.0.1:8080" },
      contract: { ...contract, description: "the contract to show (default: the stack's, else the project's)" },
      json: { type: "boolean", description: "announce the address as one JSON line (with apiVersion) instead of a sentence" },
    },
    exits: "0 stopped by Ctrl-C/SIGTERM, 1 error, 2 invalid contract or usage",
  },
  sandbox: {
    summary: "up|status|down: the main job on this machine with no cluster (loopback control plane, real pulumi up, portal)",
    synopsis: "up|status|down [--json] [--monitoring] [--second]",
    description: [
      "up: starts a loopback control plane in .sandbox/, installs a stand-in for every exposed entry of the contract, runs the real `pulumi up` on a `sandbox` stack, serves each URL on <node IP>:<nodePort>, starts the portal; returns once everything answers and leaves it running (npm run sandbox). The first run builds the toolchain from Go modules (about 45 min). status: what is running and answering. down: stops exactly what up started and removes .sandbox/.",
    ],
    positional: { name: "ACTION", description: "up, status or down", complete: ["up", "status", "down"] },
    flags: {
      json: {
        ...json,
        description:
          "print one JSON document (with apiVersion): up gives {urls, portal, folder, mode, prometheus}; status every recorded process and each problem with its remedy (more than its table); down what it stopped and what it left",
      },
      monitoring: { type: "boolean", description: "up: also Prometheus with the stack's alerts on the portal, the operator's CRDs (docs/monitoring.md)" },
      second: { type: "boolean", description: "up: also a second control plane and stack (sandbox-second); the portal shows both (docs/commands.md)" },
    },
    exits: "0 ok, 1 error (or, for status, not everything answers), 2 usage",
  },
  schema: {
    brief: true,
    bundle: true,
    summary: "print the contract's JSON Schema (for editors: contract/endpoints.schema.json)",
    synopsis: "",
    description: [
      "Prints the JSON Schema of the contract, generated from the schema `check` validates with. contract/endpoints.schema.json is a committed copy; the example contract points editors at it (yaml-language-server).",
    ],
    flags: {},
    exits: "0",
  },
  completion: {
    brief: true,
    summary: "print a bash or zsh completion script",
    synopsis: "bash|zsh | --list stacks|entries",
    description: [
      "Prints a completion script: commands, flags, stack names (Pulumi.*.yaml) and contract entry names.",
      "bash: `source <(exposure completion bash)`; zsh: `source <(exposure completion zsh)` (after compinit), or put the output in a file on $fpath named _exposure.",
    ],
    positional: { name: "SHELL", description: "bash or zsh", complete: ["bash", "zsh"] },
    flags: {
      list: {
        type: "string",
        value: "stacks|entries",
        description: "print the stack names (Pulumi.*.yaml) or the contract's exposed entry names, one a line: what the script asks while completing",
        complete: ["stacks", "entries"],
      },
    },
    exits: "0, 2 unknown shell or usage",
  },
} as const satisfies Record<string, Omit<CommandSpec, "name">>;

export type CommandName = keyof typeof TABLE;
export const SPECS = Object.fromEntries(Object.entries(TABLE).map(([name, spec]) => [name, { name, ...spec }])) as {
  [N in CommandName]: (typeof TABLE)[N] & { name: N };
};
export const COMMAND_NAMES = Object.keys(SPECS) as CommandName[];
