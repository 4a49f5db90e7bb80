// The policy pack's judge: a resource's inputs in, what it opens undeclared out, each worded with the
// allowlist line that admits it. Pure: the rules are the exposure model's (src/core), read with the
// stack's contract, entries and allowlist; index.ts reads the files and speaks to the engine.

import * as z from "zod/mini";
import { auditExposure } from "../src/core/audit";
import { describeZodIssue, distinctIssues, expandUnions, formatPath, parseContract } from "../src/core/contract/parse";
import type { Contract } from "../src/core/contract/schema";
import { isUserError } from "../src/core/errors";
import { CHECK_LIMITS, classifyCluster, describeRefused, exposureRules, field, type WorkloadObject } from "../src/core/exposure-model";
import type { Pod, Service } from "../src/core/kube/types";
import { checkObject, formatObjectProblem, summarizeProblems } from "../src/core/kube/validate";
import { selectEntries } from "../src/core/plan";
import { type Allowlist, decodeConfigValue, PROJECT, settingsSchema } from "../src/core/settings";
import { printableValue } from "../src/core/text";

/** What the pack judges with: the contract, the entries this stack publishes, the allowlist. */
export interface Judge {
  contract: Contract;
  selected: string[];
  allowlist: Allowlist;
}

/** The keys read, from the policy's config (`--policy-pack-config`) or else the stack's `ui-exposure:<key>`. */
const KEYS = ["contract", "entries", "allowlist"] as const;
/** `entries` and `allowlist` as the stack's settings check them (the contract is checked by parseContract). */
const exposureSettings = z.pick(settingsSchema, { entries: true, allowlist: true });

/**
 * The judge from the policy's config, else the stack's settings, key by key. `contract`: a file
 * (given to `loadContract`, which resolves it as the program does), or the contract itself; none:
 * `loadContract(undefined)`, the program's default. Every problem at once: `{ problem }`.
 */
export function packJudge(
  policyConfig: Readonly<Record<string, unknown>>,
  stackConfig: ReadonlyMap<string, string>,
  loadContract: (file: string | undefined) => Contract,
): Judge | { problem: string } {
  const raw: Record<string, unknown> = {};
  // A typo ("contrat") is a problem, never a key silently ignored.
  const unknownKeys = Object.keys(policyConfig).filter((k) => !(KEYS as readonly string[]).includes(k) && k !== "enforcementLevel");
  for (const key of KEYS) {
    const stackValue = stackConfig.get(`${PROJECT}:${key}`);
    if (policyConfig[key] !== undefined) raw[key] = policyConfig[key];
    else if (stackValue !== undefined) raw[key] = decodeConfigValue(stackValue);
  }
  const checked = exposureSettings.safeParse({ entries: raw.entries, allowlist: raw.allowlist }, { reportInput: true });
  // Worded as the stack's settings are (`ui-exposure:allowlist.hostPorts[0]: ...`), every problem at once.
  const problems = checked.success
    ? []
    : distinctIssues(expandUnions(checked.error.issues)).map((i) => `${PROJECT}:${formatPath(i.path)}: ${describeZodIssue(i)}`);
  for (const k of unknownKeys) problems.push(`${printableValue(k)}: not a key of this policy (${KEYS.join(", ")}, enforcementLevel)`);
  let contract: Contract | undefined;
  try {
    contract =
      typeof raw.contract === "string" || raw.contract === undefined
        ? loadContract(raw.contract)
        : parseContract(JSON.stringify(raw.contract), "contract (inline in the policy config)");
  } catch (err) {
    const message = isUserError(err) ? err.message : `contract ${printableValue(String(raw.contract))}: cannot be read (${(err as Error).message})`;
    problems.push(
      raw.contract === undefined ? `no contract given (policy 'undeclared-exposure' or ${PROJECT}:contract), and the default: ${message}` : message,
    );
  }
  // Entries are checked against a contract that could be read only.
  const selection = checked.success && contract ? selectEntries(contract, checked.data.entries) : undefined;
  problems.push(...(selection?.problems ?? []));
  if (problems.length || !checked.success || !selection || !contract) {
    return {
      problem: `the ui-exposure policy pack's configuration (--policy-pack-config, policy 'undeclared-exposure', else the stack's ${PROJECT}:contract, entries and allowlist) is invalid:\n${problems.map((p) => `  - ${p}`).join("\n")}`,
    };
  }
  return { contract, selected: selection.entries.map((e) => e.name), allowlist: checked.data.allowlist };
}

/** A Service's ports named in a message: the first ones, then how many more (a message stays readable). */
const SHOWN_PORTS = 10;

/** The Kubernetes resources judged: Services, pods and the workloads with a pod template, their Patch and List forms too. */
const JUDGED =
  /^kubernetes:(?:core|apps|batch|extensions)\/v\w+:(Service|Pod|Deployment|DaemonSet|StatefulSet|ReplicaSet|ReplicationController|Job|CronJob)(Patch|List)?$/;

/**
 * What a resource of `type` opens that no rule declares, one message each: the resource, the port,
 * why, and the allowlist line that would admit it. A value unknown at preview throws when the model
 * reads it (index.ts), and @pulumi/policy reports the resource as not judged yet.
 */
export function undeclaredExposure(judge: Judge, type: string, props: unknown): string[] {
  const m = JUDGED.exec(type);
  if (!m?.[1]) return [];
  const kind = m[1];
  const items = m[2] === "List" ? field(props, "items") : [props];
  return (Array.isArray(items) ? items : []).flatMap((o) => printable(judgeObject(judge, kind, o)));
}

const printable = (lines: string[]) => lines.map(printableValue);

function judgeObject(judge: Judge, kind: string, o: unknown): string[] {
  const metadata = field(o, "metadata");
  const namespace = typeof field(metadata, "namespace") === "string" ? (field(metadata, "namespace") as string) : "default";
  const name = field(metadata, "name");
  if (typeof name !== "string" || !name) return [`${kind} in ${namespace} has no metadata.name: it cannot be judged (name it, or let the provider name it)`];
  const where = `${namespace}/${name}`;
  // Only the fields the model reads: any other may be unknown at preview without keeping the object from being judged.
  const meta = { name, namespace, labels: field(metadata, "labels") };
  if (kind === "Service") {
    const svc = { metadata: meta, spec: field(o, "spec") } as Service;
    // A program is not type-checked: a shape the API server would refuse is named, never a TypeError.
    // A value unknown at preview (a nodePort allocated at create) stops this check only: the model reads what it needs.
    let problems: string[] = [];
    try {
      problems = checkObject("Service", svc).map(formatObjectProblem);
    } catch {}
    if (problems.length) return [`Service ${where}: cannot be judged: ${summarizeProblems(problems, 3).join("; ")}`];
    // Read only for a violation: a nodePort may be unknown at preview (allocated at create) without keeping the Service from being judged.
    const ports = () => {
      const all = (svc.spec?.ports ?? []).map((p) => `${p.name ? `${p.name} ` : ""}${p.port}${p.nodePort ? `->${p.nodePort}` : ""}`);
      return all.length ? `ports ${summarizeProblems(all, SHOWN_PORTS).join(", ")}` : "no ports";
    };
    return auditExposure({ ...judge, services: [svc], pods: [] }).undeclared.map(
      (u) => `Service ${where} (${u.kind}, ${ports()}): ${u.reason}${u.allowlistLine ? `; the allowlist line that admits it: ${u.allowlistLine}` : ""}`,
    );
  }
  const rules = exposureRules(judge.contract, judge.selected, judge.allowlist);
  const classified =
    kind === "Pod"
      ? classifyCluster(rules, { services: [], pods: [{ metadata: meta, spec: field(o, "spec") } as Pod] }).pods
      : classifyCluster(rules, { services: [], pods: [], workloads: [{ kind, metadata: { name, namespace }, spec: field(o, "spec") } as WorkloadObject] })
          .workloads;
  return classified.flatMap((p) => {
    if (p.tooLarge)
      return [
        `${kind} ${where}: too large to check (more than ${CHECK_LIMITS.containers} containers in a list or ${CHECK_LIMITS.portsPerContainer} ports in a container): make it smaller`,
      ];
    // A pod is admitted by its own name, a workload's pods by the prefix "<workload>-".
    const item = kind === "Pod" ? where : `${where}-*`;
    return p.openings.flatMap((o) =>
      o.undeclared
        ? [`${kind} ${where} (${describeRefused([o])}): ${o.undeclared}; the allowlist line that admits it: ${PROJECT}:allowlist.hostPorts '${item}:${o.item}'`]
        : [],
    );
  });
}

/** A Helm v3 Release installs objects the engine never shows a policy: their exposure is not judged here. */
export function opaqueRelease(type: string, props: unknown): string | undefined {
  if (type !== "kubernetes:helm.sh/v3:Release") return undefined;
  const name = field(props, "name");
  const namespace = field(props, "namespace");
  const chart = field(props, "chart");
  return printableValue(
    `Helm Release ${typeof namespace === "string" ? namespace : "default"}/${typeof name === "string" ? name : "(unnamed)"} (chart ${typeof chart === "string" ? chart : "?"}): the objects it installs are not shown to policy packs, so what they open is not judged; render the chart with kubernetes:helm.sh/v4:Chart (its objects are judged one by one), or rely on the admission guard and exposure drift for it`,
  );
}
