import type { AuditInput } from "./audit";
import { type ExposureRules, exposureRules, type PodRule } from "./exposure-model";
import { CHECK_LIMITS, field, HOST_NETWORK_RULE, HOST_PORT_RULE, POD_CONTAINER_LISTS, type ServiceRule, serviceCelVariables } from "./exposure-rules";
import { type Finding, finding } from "./findings";
import type { ClusterReader, CustomKind } from "./kube/cluster";
import { MANAGED_BY_LABEL, MANAGED_BY_VALUE, type Service } from "./kube/types";
import { presentsAsOursCel } from "./ownership";
import type { AdmissionSettings } from "./settings";
import { fnv1a } from "./text";

// The exposure guard: a ValidatingAdmissionPolicy (CEL, GA since Kubernetes 1.30) generated from the contract, the allowlist and the rule table
// (exposure-rules.ts), so that undeclared exposure is refused before it exists; test/exposure-model.test.ts holds its CEL to the model's answers.

const ADMISSION_GROUP_VERSION = "admissionregistration.k8s.io/v1";

const admissionKind = (plural: string, kind: string): CustomKind => ({ group: "admissionregistration.k8s.io", versions: ["v1"], plural, kind });
const VALIDATING_ADMISSION_POLICIES = admissionKind("validatingadmissionpolicies", "ValidatingAdmissionPolicy");
const VALIDATING_ADMISSION_POLICY_BINDINGS = admissionKind("validatingadmissionpolicybindings", "ValidatingAdmissionPolicyBinding");

type EnforcedMode = Exclude<AdmissionSettings["mode"], "off">;

const VALIDATION_ACTIONS: Record<EnforcedMode, string[]> = { deny: ["Deny"], warn: ["Warn"], audit: ["Audit"] };

/** The cluster-scoped name of a stack's guard, never shared by two stacks: a stack name that is not a DNS label is made one, with "--" and a hash. */
export function admissionPolicyName(stack: string): string {
  if (/^[a-z0-9]+(-[a-z0-9]+)*$/.test(stack)) return `ui-exposure-guard-${stack}`;
  const safe = (stack.toLowerCase().match(/[a-z0-9]+/g) ?? []).join("-").slice(0, 100);
  return `ui-exposure-guard--${safe ? `${safe}--` : ""}${fnv1a(stack).toString(36)}`;
}

const listGuards = (cluster: Pick<ClusterReader, "listCustom">) =>
  Promise.all([cluster.listCustom(VALIDATING_ADMISSION_POLICIES), cluster.listCustom(VALIDATING_ADMISSION_POLICY_BINDINGS)]);

/** The uids of the live policy and binding named `name` (one list call each). */
export async function liveGuardUids(cluster: Pick<ClusterReader, "listCustom">, name: string) {
  const [policy, binding] = (await listGuards(cluster)).map((live) => live.find((o) => o.metadata?.name === name)?.metadata?.uid);
  return { policy, binding };
}

/** On the ClusterIP Service `up` dry-runs: only the guard whose policy it names refuses it, proving this stack's binding denies, whatever other guards run. */
export const GUARD_PROBE_ANNOTATION = "ui-exposure.io/guard-probe";

/** The Service whose dry-run create only the guard `policyName` in deny refuses (namespace: one where Services exist). */
export function guardProbe(policyName: string, namespace: string): Service {
  return {
    metadata: { name: "ui-exposure-deny-probe", namespace, annotations: { [GUARD_PROBE_ANNOTATION]: policyName } },
    spec: { type: "ClusterIP", ports: [{ port: 80 }] },
  };
}

/** The stack's contract, entries and allowlist, as for the audit. */
export interface AdmissionInput extends Pick<AuditInput, "contract" | "selected" | "allowlist"> {
  stack: string;
  mode: EnforcedMode;
  failurePolicy: AdmissionSettings["failurePolicy"];
  /** The contract file as the operator knows it ("contract/endpoints.yaml"), for the messages. */
  contractFile: string;
  /** The Service and pod rules the guard is generated from (default: the table's, SERVICE_RULES and POD_RULES). */
  serviceRules?: readonly ServiceRule[];
  podRules?: readonly PodRule[];
}

export type AdmissionManifests = ReturnType<typeof admissionManifests>;
export type PolicySpec = AdmissionManifests["policy"]["spec"];

/** Unpaired UTF-16 surrogates: JSON escapes them as \uD800, which no CEL string literal may hold. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** A CEL string literal (JSON's escapes are CEL's); a value not well-formed Unicode stops the program, as the policy would not compile. */
const cel = (s: string) => {
  if (LONE_SURROGATE.test(s)) throw new Error(`admission policy: ${JSON.stringify(s).slice(0, 80)} is not well-formed Unicode and cannot be matched in CEL`);
  return JSON.stringify(s);
};
/** Text of a message (a file name...): made well-formed rather than refused, since nothing matches on it. */
const wellFormed = (s: string) => s.replace(new RegExp(LONE_SURROGATE.source, "g"), "\uFFFD");
const celText = (s: string) => cel(wellFormed(s));
const celList = (items: readonly string[]) => `[${items.map(cel).join(", ")}]`;
const anyOf = (terms: readonly string[]) => (terms.length ? terms.map((t) => `(${t})`).join(" || ") : "false");

const containerList = (template: string, list: string) => `(has(${template}.spec.${list}) ? ${template}.spec.${list} : [])`;
const containersOf = (template: string) => POD_CONTAINER_LISTS.map((l) => containerList(template, l)).join(" + ");

/**
 * The model's hostPortDeclaration in CEL: a map from each port some rule names to whether one declares it for this pod, so that checking a port is one
 * lookup whatever the allowlist's size (an expression past the API server's cost limit would admit it under Ignore).
 */
function declaredPortsMap(rules: ExposureRules): string {
  const byPort = new Map<number, string[]>();
  const add = (port: number, term: string) => byPort.set(port, [...(byPort.get(port) ?? []), term]);
  for (const e of rules.hostPortEntries) {
    const selector = Object.entries(e.podSelector).map(([k, v]) => `${cel(k)} in variables.labels && variables.labels[${cel(k)}] == ${cel(v)}`);
    add(e.port, [`request.namespace == ${cel(e.namespace)}`, ...selector].join(" && "));
  }
  const items = rules.hostPorts.filter((p) => typeof p.port === "number");
  for (const port of new Set(items.map((p) => p.port as number))) for (const term of namesPod(items.filter((p) => p.port === port))) add(port, term);
  const entries = [...byPort].sort(([a], [b]) => a - b).map(([port, terms]) => `${port}: ${anyOf(terms)}`);
  return `{${entries.join(", ")}}`;
}

/** The exposure model's namesPod in CEL, each item's text written once (so that the expressions stay within CEL's size limit). */
function namesPod(items: readonly { prefix: boolean; text: string }[]): string[] {
  const exact = [...new Set(items.filter((p) => !p.prefix).map((p) => p.text))];
  const prefixes = [...new Set(items.filter((p) => p.prefix).map((p) => p.text))];
  return [
    ...(exact.length === 1 ? [`variables.isPod && variables.podKey == ${cel(exact[0] as string)}`] : []),
    ...(exact.length > 1 ? [`variables.isPod && variables.podKey in ${celList(exact)}`] : []),
    ...(prefixes.length ? [`${celList(prefixes)}.exists(t, variables.podKey.startsWith(t) || variables.podGeneratedKey.startsWith(t))`] : []),
  ];
}

/** The exposure model's serviceVerdict in CEL: our Service by what its rules open beyond the entry, any other by the allowlist. */
function serviceDeclared(rules: ExposureRules): string {
  const exact = rules.services.filter((p) => !p.prefix).map((p) => p.text);
  const prefixes = rules.services.filter((p) => p.prefix).map((p) => p.text);
  const allowlisted = anyOf([
    ...(exact.length ? [`variables.serviceKey in ${celList([...new Set(exact)].sort())}`] : []),
    ...(prefixes.length ? [`${celList(prefixes)}.exists(p, variables.serviceKey.startsWith(p))`] : []),
  ]);
  if (rules.ourServices.size === 0) return allowlisted;
  const within = rules.serviceRules.map((r) => r.cel.withinEntry ?? `!(${r.cel.opens})`).join(" && ");
  return `variables.serviceKey in ${celList([...rules.ourServices.keys()].sort())} ? ${within} : ${allowlisted === "false" ? "false" : `(${allowlisted})`}`;
}
/** Past this many characters, the old list of a workload's undeclared host ports is not searched port by port (bounded work). */
const OLD_LIST_LOOKUP = 400;

/** Kinds whose pods (or pod templates) may hold a hostPort; a CronJob's is in its jobTemplate. */
const templateOf = (obj: string) => `request.kind.kind == 'CronJob' ? ${obj}.spec.jobTemplate.spec.template : ${obj}.spec.template`;

/** The policy and binding for a stack whose guard is on. Pure: same inputs, same objects. */
export function admissionManifests(input: AdmissionInput) {
  const name = admissionPolicyName(input.stack);
  const labels = { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE };
  const stackFile = `Pulumi.${input.stack}.yaml`;
  const notInContract = `is not in the ui-exposure contract of stack ${input.stack}`;
  const serviceHelp = `: publish the UI through an entry of ${input.contractFile} (ui-exposure then creates '<entry>-nodeport'), or declare the Service in ui-exposure:allowlist.services of ${stackFile}`;
  const hostPortHelp = `: declare it as a hostPort entry (namespace, port, podSelector) of ${input.contractFile}, or in ui-exposure:allowlist.hostPorts of ${stackFile} as 'namespace/pod-prefix*:port' (or 'namespace/pod-prefix*:hostNetwork' for a pod on the host network)`;
  const oldTemplate = "variables.oldTemplate";

  const rules = exposureRules(input.contract, input.selected, input.allowlist, input.serviceRules, input.podRules);
  const L = CHECK_LIMITS;
  // The exposure model's holdsNoHostPort and podTooLargeToCheck: counts first, then one pass over the ports.
  const holdsNoHostPort = (template: string) =>
    `!${HOST_NETWORK_RULE.cel(template)} && !(${containersOf(template)}).exists(c, has(c.ports) && c.ports.exists(p, has(p.hostPort) && p.hostPort != 0))`;
  // (Each pass over the ports is a variable of its own: the API server limits each expression's cost.)
  const podTooLarge = (template: string, holdsNone: string) =>
    `${POD_CONTAINER_LISTS.map((l) => `size(${containerList(template, l)}) > ${L.containers}`).join(" || ")} || (${containersOf(template)}).exists(c, has(c.ports) && size(c.ports) > ${L.plainPortsPerContainer}) || ((${containersOf(template)}).exists(c, has(c.ports) && size(c.ports) > ${L.portsPerContainer}) && !${holdsNone})`;
  // One list per container (CEL has no flatten before 1.31) of the host ports no rule declares, then as one string.
  const undeclaredOf = (template: string) =>
    `(${containersOf(template)}).map(c, has(c.ports) ? c.ports.map(p, ${HOST_PORT_RULE.cel("p", HOST_NETWORK_RULE.cel(template))}).filter(h, h != 0 && !(h in variables.declaredPorts && variables.declaredPorts[h])) : [])`;
  const listsPorts = (template: string) => `(${containersOf(template)}).exists(c, has(c.ports) && size(c.ports) > 0)`;
  const joined = (lists: string) => `${lists}.map(l, l.map(h, string(h)).join(', ')).filter(s, s != '').join(', ')`;
  // The exposure model's podOpenings, rule by rule: variables.<item>Declared (an item names the pod), <item>Unlisted (an
  // opening of its own, undeclared) and old<Item>Unlisted (this UPDATE's workload already opened it: not new).
  const Item = (r: PodRule) => r.item[0]?.toUpperCase() + r.item.slice(1);
  const ownOpening = (r: PodRule, t: string, declared = "") => `${r.cel(t)}${declared}${r.coversPorts ? ` && !${listsPorts(t)}` : ""}`;

  const variables = [
    {
      name: "name",
      expression:
        "has(object.metadata.name) && object.metadata.name != '' ? object.metadata.name : (has(object.metadata.generateName) ? object.metadata.generateName : '')",
    },
    { name: "serviceKey", expression: "request.namespace + '/' + variables.name" },
    { name: "isService", expression: "request.kind.kind == 'Service'" },
    ...serviceCelVariables("object", "variables.isService"),
    // The exposure model's serviceOpenings: some rule of the table opens something.
    { name: "exposingService", expression: anyOf(rules.serviceRules.map((r) => r.cel.opens)) },
    { name: "serviceDeclared", expression: serviceDeclared(rules) },
    {
      // A preview dry-runs the create of a Service the contract just gained against the old guard: admitted if it presents as ours
      // (a dry run stores nothing); the real create meets the updated guard.
      name: "previewOfOurs",
      expression: `has(request.dryRun) && request.dryRun && ${presentsAsOursCel(cel)}`,
    },
    // Bounded work: an object past these sizes is refused unread, never left to exceed the cost limit.
    { name: "serviceTooLarge", expression: `size(variables.servicePorts) > ${L.servicePorts} || size(variables.externalIPs) > ${L.externalIPs}` },
    { name: "isUpdate", expression: "request.operation == 'UPDATE' && oldObject != null" },
    ...serviceCelVariables("oldObject", "variables.isUpdate"),
    {
      // An UPDATE that opens nothing the Service did not open before is not new exposure (drift reports the old).
      name: "newServiceExposure",
      expression: `!variables.isUpdate || size(variables.oldServicePorts) > ${L.servicePorts} || size(variables.oldExternalIPs) > ${L.externalIPs} || ${anyOf(rules.serviceRules.map((r) => r.cel.newOnUpdate))}`,
    },
    { name: "isPod", expression: "request.kind.kind == 'Pod'" },
    { name: "template", expression: `variables.isPod ? object : (${templateOf("object")})` },
    { name: "holdsNoHostPort", expression: `!variables.isService && ${holdsNoHostPort("variables.template")}` },
    { name: "podTooLarge", expression: `!variables.isService && (${podTooLarge("variables.template", "variables.holdsNoHostPort")})` },
    {
      name: "labels",
      expression: "has(variables.template.metadata) && has(variables.template.metadata.labels) ? variables.template.metadata.labels : {}",
    },
    { name: "podKey", expression: "request.namespace + '/' + variables.name + (variables.isPod ? '' : '-')" },
    // The exposure model's namesPod keys: a controller's pod is also matched by its generateName ("<owner>-", never cut short).
    {
      name: "podGeneratedKey",
      expression:
        "variables.isPod && has(object.metadata.generateName) && object.metadata.generateName != '' ? request.namespace + '/' + object.metadata.generateName : ''",
    },
    { name: "declaredPorts", expression: declaredPortsMap(rules) },
    // An item "namespace/pod-prefix*:hostNetwork" (a rule that covers ports) declares all a pod on the host network opens.
    ...rules.podRules.map((r) => ({
      name: `${r.item}Declared`,
      expression: `!variables.isService && ${r.cel("variables.template")} && (${anyOf(namesPod(rules.hostPorts.filter((p) => p.port === r.item)))})`,
    })),
    { name: "oldTemplate", expression: templateOf("oldObject") },
    { name: "isWorkloadUpdate", expression: "variables.isUpdate && !variables.isPod && !variables.isService" },
    { name: "oldHoldsNoHostPort", expression: `!variables.isWorkloadUpdate || ${holdsNoHostPort(oldTemplate)}` },
    { name: "oldPodTooLarge", expression: `variables.isWorkloadUpdate && !variables.oldHoldsNoHostPort && (${podTooLarge(oldTemplate, "false")})` },
    {
      name: "undeclaredHostPorts",
      expression: `${["isService", "podTooLarge", "holdsNoHostPort", ...rules.podRules.flatMap((r) => (r.coversPorts ? [`${r.item}Declared`] : []))].map((v) => `variables.${v}`).join(" || ")} ? [] : ${undeclaredOf("variables.template")}`,
    },
    ...rules.podRules.flatMap((r) => [
      {
        name: `${r.item}Unlisted`,
        expression: `!variables.isService && !variables.podTooLarge && ${ownOpening(r, "variables.template", ` && !variables.${r.item}Declared`)}`,
      },
      { name: `old${Item(r)}Unlisted`, expression: `variables.isWorkloadUpdate && ${ownOpening(r, oldTemplate)}` },
    ]),
    { name: "undeclaredHostPortList", expression: joined("variables.undeclaredHostPorts") },
    {
      // What the workload held before this UPDATE is not new: refusing it would block its every later change (scaling, image bumps).
      name: "oldUndeclaredHostPortList",
      expression: `!variables.isWorkloadUpdate || variables.oldHoldsNoHostPort || variables.oldPodTooLarge ? '' : ${joined(undeclaredOf(oldTemplate))}`,
    },
    {
      // The undeclared host ports this request adds, with bounded work: each is looked up in the old list (as text, up to
      // OLD_LIST_LOOKUP characters); past that, every undeclared port is judged anew.
      name: "refusedHostPorts",
      expression: `variables.oldUndeclaredHostPortList == '' ? variables.undeclaredHostPorts : variables.undeclaredHostPortList == variables.oldUndeclaredHostPortList ? [] : size(variables.oldUndeclaredHostPortList) > ${OLD_LIST_LOOKUP} ? variables.undeclaredHostPorts : variables.undeclaredHostPorts.map(l, l.filter(h, !(', ' + variables.oldUndeclaredHostPortList + ',').contains(', ' + string(h) + ',')))`,
    },
    { name: "refusedHostPortList", expression: joined("variables.refusedHostPorts") },
  ];

  const probeRefused = `the dry run that checks the exposure guard of stack ${input.stack} is in force: refused, as expected (nothing was stored)`;
  const tooLarge = `too large for the exposure guard to check (ui-exposure refuses what it cannot check): `;
  // Every refusal is a 403 Forbidden.
  const validations = [
    {
      // A Service that opens something, created or changed to open more, must be declared (cheap tests first, port lists last).
      expression:
        "!variables.isService || !variables.exposingService || variables.serviceDeclared || variables.previewOfOurs || (!variables.serviceTooLarge && !variables.newServiceExposure)",
      messageExpression: `'Service ' + variables.serviceKey + ' (type ' + variables.serviceType + ${rules.serviceRules.flatMap((r) => (r.cel.describe ? [`${r.cel.describe} + `] : [])).join("")}(variables.serviceKey in ${celList([...rules.ourServices.keys()].sort())} && size(variables.servicePorts) > 1 ? ', ' + string(size(variables.servicePorts)) + ' ports where the contract declares one' : '') + ') ' + (variables.serviceTooLarge ? ${celText(`has more than ${L.servicePorts} ports or ${L.externalIPs} externalIPs: ${tooLarge}`)} : '') + ${celText(notInContract + serviceHelp)}`,
      message: `a Service reachable from outside the cluster (NodePort, LoadBalancer, externalIPs) ${notInContract}${serviceHelp}`,
    },
    {
      expression: "variables.isService || !variables.podTooLarge",
      messageExpression: `request.kind.kind + ' ' + variables.serviceKey + ${celText(` has more than ${L.containers} containers in a list or ${L.portsPerContainer} ports in a container: ${tooLarge}split it or declare fewer ports`)}`,
      message: `a pod with more than ${L.containers} containers in a list or ${L.portsPerContainer} ports in a container is ${tooLarge}split it or declare fewer ports`,
    },
    {
      // The list of ports is cut in the message: the API server drops one past 5 KiB for `message`.
      expression: "variables.isService || variables.podTooLarge || variables.refusedHostPortList == ''",
      messageExpression: `request.kind.kind + ' ' + variables.serviceKey + (variables.isPod ? '' : ' (pod template)') + ' declares hostPort ' + (size(variables.refusedHostPortList) > 1000 ? variables.refusedHostPortList.substring(0, 1000) + '...' : variables.refusedHostPortList) + ', which ' + ${celText(notInContract + hostPortHelp)}`,
      message: `a hostPort ${notInContract}${hostPortHelp}`,
    },
    ...rules.podRules.map((r) => {
      const help = `: declare it in ui-exposure:allowlist.hostPorts of ${stackFile} as 'namespace/pod-prefix*:${r.item}'`;
      return {
        expression: `!variables.${r.item}Unlisted || variables.old${Item(r)}Unlisted`,
        messageExpression: `request.kind.kind + ' ' + variables.serviceKey + (variables.isPod ? '' : ' (pod template)') + ${celText(` ${r.words.says}, which ${notInContract}${help}`)}`,
        message: `a pod that ${r.words.says} ${notInContract}${help}`,
      };
    }),
    {
      // guardProbe: refused by this guard only, so that up sees deny in force (a dry run: nothing is stored).
      expression: `!(variables.isService && has(request.dryRun) && request.dryRun && has(object.metadata.annotations) && ${cel(GUARD_PROBE_ANNOTATION)} in object.metadata.annotations && object.metadata.annotations[${cel(GUARD_PROBE_ANNOTATION)}] == ${cel(name)})`,
      messageExpression: celText(probeRefused),
      message: probeRefused,
    },
  ].map((v) => ({ ...v, message: wellFormed(v.message), reason: "Forbidden" }));

  const policy = {
    apiVersion: ADMISSION_GROUP_VERSION,
    kind: "ValidatingAdmissionPolicy",
    metadata: { name, labels },
    spec: {
      failurePolicy: input.failurePolicy,
      matchConstraints: {
        resourceRules: [
          { apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE", "UPDATE"], resources: ["services"] },
          // A pod's ports cannot change after creation: CREATE is enough.
          { apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["pods"] },
          { apiGroups: ["apps"], apiVersions: ["v1"], operations: ["CREATE", "UPDATE"], resources: ["deployments", "statefulsets", "daemonsets"] },
          { apiGroups: ["batch"], apiVersions: ["v1"], operations: ["CREATE", "UPDATE"], resources: ["jobs", "cronjobs"] },
        ],
      },
      variables,
      validations,
    },
  };
  const binding = {
    apiVersion: ADMISSION_GROUP_VERSION,
    kind: "ValidatingAdmissionPolicyBinding",
    metadata: { name, labels },
    spec: { policyName: name, validationActions: VALIDATION_ACTIONS[input.mode] },
  };
  return { policy, binding };
}

/** Why the cluster cannot hold the guard, from the resources its API serves (undefined: not known, e.g. a snapshot). */
export function admissionApiProblem(served: readonly string[] | undefined, source: string): string | undefined {
  if (served === undefined) return undefined;
  const missing = [VALIDATING_ADMISSION_POLICIES.plural, VALIDATING_ADMISSION_POLICY_BINDINGS.plural].filter((r) => !served.includes(r));
  if (missing.length === 0) return undefined;
  return `ui-exposure:admission: ${source} does not serve ${missing.join(" and ")} in ${ADMISSION_GROUP_VERSION} (ValidatingAdmissionPolicy is GA from Kubernetes 1.30): upgrade the cluster, or set ui-exposure:admission.mode to off`;
}

/** Whether `live` holds all `expected` says: fields the API server defaults may be added; lists keep their length. */
export function holdsAll(expected: unknown, live: unknown): boolean {
  if (Array.isArray(expected)) {
    return Array.isArray(live) && live.length === expected.length && expected.every((e, i) => holdsAll(e, live[i]));
  }
  if (expected !== null && typeof expected === "object") {
    if (live === null || typeof live !== "object" || Array.isArray(live)) return false;
    const l = live as Record<string, unknown>;
    return Object.entries(expected as Record<string, unknown>).every(([k, v]) => holdsAll(v, l[k]));
  }
  return expected === live;
}

interface LiveObject {
  metadata?: { name?: string };
  spec?: unknown;
}

/** `exposure drift`'s check of the guard: the live policy and binding are what the contract generates now; with the mode off, none is left. */
export function admissionDrift(input: {
  stack: string;
  /** What `up` would apply now; undefined when the mode is off. */
  expected: AdmissionManifests | undefined;
  policies: readonly LiveObject[];
  bindings: readonly LiveObject[];
}): Finding[] {
  const name = admissionPolicyName(input.stack);
  const check = (kind: string, live: readonly LiveObject[], spec: unknown): Finding[] => {
    const obj = live.find((o) => o.metadata?.name === name);
    const found = (code: string, message: string) => [finding(code, "drift", `${kind} ${name}`, message)];
    if (!input.expected) {
      const message = "ui-exposure:admission.mode is off but the guard is still in the cluster: run `pulumi up` to remove it";
      return obj ? found("admission-guard-left-over", message) : [];
    }
    if (!obj) return found("admission-guard-missing", "absent from the cluster: run `pulumi up` to create it");
    if (holdsAll(spec, obj.spec)) return [];
    return found(
      "admission-guard-stale",
      "differs from what the contract and the allowlist generate now (edited by hand, or an older contract): run `pulumi up` to regenerate it",
    );
  };
  return [
    ...check("ValidatingAdmissionPolicy", input.policies, input.expected?.policy.spec),
    ...check("ValidatingAdmissionPolicyBinding", input.bindings, input.expected?.binding.spec),
  ];
}

type PollOptions = { timeoutMs: number; intervalMs: number; sleep?: (ms: number) => Promise<void>; now?: () => number };

/** Calls `attempt` every `intervalMs` until it is done or `timeoutMs` has elapsed; returns its last value. */
async function poll<T>(opts: PollOptions, attempt: () => Promise<{ done: boolean; value: T }>): Promise<T> {
  const now = opts.now ?? Date.now;
  const end = now() + opts.timeoutMs;
  for (;;) {
    const { done, value } = await attempt();
    if (done || now() >= end) return value;
    await (opts.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))))(opts.intervalMs);
  }
}

/**
 * The API server applies a changed policy a moment after storing it: waits until a dry run of each Service gets the answer expected of the guard
 * `policyName` (admitted, or refused by it: guardProbe), or `timeoutMs` elapses; returns those answered otherwise.
 */
export async function untilGuardAnswers(
  probe: (service: Service) => Promise<{ admitted: true } | { admitted: false; message: string }>,
  checks: readonly { service: Service; admitted: boolean }[],
  policyName: string,
  opts: PollOptions,
): Promise<string[]> {
  let pending = [...checks];
  return poll(opts, async () => {
    const results = await Promise.all(pending.map(async (check) => ({ check, result: await probe(check.service) })));
    pending = results
      .filter(({ check, result }) => check.admitted === (!result.admitted && result.message.includes(`'${policyName}'`)))
      .map(({ check }) => check);
    return { done: pending.length === 0, value: pending.map(({ service: s }) => `${s.metadata.namespace}/${s.metadata.name}`) };
  });
}

/** The live guard against what `up` would apply now. With the mode off, a cluster that cannot list the guard has none of ours. */
export async function readAdmissionDrift(
  cluster: ClusterReader,
  input: Omit<AdmissionInput, "mode" | "failurePolicy"> & { admission: AdmissionSettings },
): Promise<Finding[]> {
  const { admission, ...rest } = input;
  const expected = admission.mode === "off" ? undefined : admissionManifests({ ...rest, mode: admission.mode, failurePolicy: admission.failurePolicy });
  try {
    const [policies, bindings] = await listGuards(cluster);
    return admissionDrift({ stack: input.stack, expected, policies, bindings });
  } catch (err) {
    if (expected) throw err;
    return [];
  }
}

/**
 * The API server's own type check of the policy: kube-controller-manager writes `status.typeChecking` with `status.observedGeneration` once it has
 * checked the stored generation; a binding may deny only once this is `clean`.
 */
export type TypeCheck = { state: "clean" } | { state: "pending"; why: string } | { state: "warnings"; warnings: string[] };

export function policyTypeCheck(live: unknown): TypeCheck {
  const generation = field(field(live, "metadata"), "generation");
  const observed = field(field(live, "status"), "observedGeneration");
  if (typeof generation !== "number" || typeof observed !== "number" || observed < generation) {
    return { state: "pending", why: `generation ${String(generation)} not type-checked yet (observed ${String(observed ?? "none")})` };
  }
  const raw = field(field(field(live, "status"), "typeChecking"), "expressionWarnings");
  const warnings = (Array.isArray(raw) ? raw : []).slice(0, 5).map((w) => {
    const [fieldRef, warning] = [field(w, "fieldRef"), field(w, "warning")];
    // The API server's text names each kind with the compiler's error and a caret: its first line says it.
    const first = typeof warning === "string" ? (warning.split("\n").find((l) => l.trim()) ?? "") : "";
    return `${typeof fieldRef === "string" ? fieldRef : "(expression)"}: ${first.slice(0, 300)}`;
  });
  return warnings.length ? { state: "warnings", warnings } : { state: "clean" };
}

/** Waits until the API server has type-checked the policy `name` cleanly; else the message `up` fails with, and the binding is not applied. */
export async function untilPolicyTypeChecked(cluster: Pick<ClusterReader, "listCustom">, name: string, opts: PollOptions): Promise<string | undefined> {
  const what = `ValidatingAdmissionPolicy ${name}`;
  return poll(opts, async () => {
    const live = (await cluster.listCustom(VALIDATING_ADMISSION_POLICIES)).find((p) => p.metadata?.name === name);
    const check: TypeCheck = live ? policyTypeCheck(live) : { state: "pending", why: "not found" };
    if (check.state === "clean") return { done: true, value: undefined };
    if (check.state === "warnings") {
      return {
        done: true,
        value: `${what}: the API server's type check of the generated expressions warns (${check.warnings.join("; ")}); its binding refuses nothing until an up passes this check. This is a ui-exposure bug: report it, and set ui-exposure:admission.mode to warn or off meanwhile`,
      };
    }
    return {
      done: false,
      value: `${what}: the API server did not type-check it within ${opts.timeoutMs / 1000}s (${check.why}; the check is kube-controller-manager's ValidatingAdmissionPolicy status controller); its binding refuses nothing until an up passes this check. Run pulumi up again once the controller manager runs`,
    };
  });
}
