import * as z from "zod/mini";
import { describeValue, describeZodIssue, distinctIssues, expandUnions, formatPath } from "./contract/parse";
import { dnsLabel, entryName, intIn } from "./contract/schema";
import { UserError, userErrorFromProblems } from "./errors";
import { CHECK_LIMITS, HOST_PORT_ITEM } from "./exposure-rules";
import { ipVersion } from "./ip";
import "./zod-messages";

/** Pulumi project name: also the namespace of the stack configuration keys. */
export const PROJECT = "ui-exposure";

/** The port of an allowlist pattern: an integer 1-65535, written without a leading zero. */
const allowlistPortOk = (digits: string) => /^[1-9]\d{0,4}$/.test(digits) && Number(digits) <= 65535;

const nonEmpty = (fallback: string) => z._default(z.string().check(z.minLength(1)), fallback);
const flag = (fallback: boolean) => z._default(z.boolean(), fallback);

const chartSchema = z.strictObject({
  /** A Helm repository or an OCI registry (`oci://host/path`); omitted, `name` is a local chart (a `.tgz` or a folder: docs/cilium.md). */
  repository: z.optional(
    z.string().check(
      z.regex(/^(https?|oci):\/\/[^\s/]+\S*$/, {
        message:
          "must be a Helm repository URL (https://... or http://...) or an OCI registry (oci://host/path); for a local chart omit it and give the .tgz or folder in name",
      }),
    ),
  ),
  /** Chart name in the repository; without a repository, a local `.tgz`/folder or a full `oci://` reference. */
  name: nonEmpty("cilium"),
  /** Exact chart version (e.g. 1.18.12): the values generated depend on it (src/core/cilium/versions.ts). */
  version: z.string().check(z.regex(/^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/, { message: "must be an exact chart version such as 1.18.12" })),
  /** Namespace and name of the Helm release; to adopt a scripted install, those of that release. */
  namespace: nonEmpty("kube-system"),
  releaseName: nonEmpty("cilium"),
});

const l4Schema = z.strictObject({
  mode: z.literal("l4"),
  chart: chartSchema,
  /** API server address the agents use once kube-proxy is gone: `l4` requires both (optional here so that planning says why). */
  k8sServiceHost: z.optional(z.string().check(z.minLength(1))),
  k8sServicePort: z.optional(intIn(1, 65535, "expected a port number between 1 and 65535")),
  /** Chart values changed on purpose, merged over the live release's (src/core/cilium/values.ts); a value that contradicts an owned key is rejected. */
  values: z._default(z.record(z.string(), z.unknown()), {}),
  /** Production guard: a stack with `production: true` refuses `l4` unless phase 2 was decided. */
  phase2Decided: flag(false),
  /** Skip Helm's --wait on install/upgrade (false: wait for the chart's workloads, up to 300 s). */
  skipAwait: flag(true),
});

const cohabitSchema = z.strictObject({
  mode: z.literal("cohabit"),
  /** Where the live Cilium configuration is read (the guard on kube-proxy replacement). */
  namespace: nonEmpty("kube-system"),
  configMap: nonEmpty("cilium-config"),
});

export const ciliumSettingsSchema = z.discriminatedUnion("mode", [l4Schema, cohabitSchema], {
  error: (issue) => (issue.code === "invalid_union" ? "mode must be 'l4' or 'cohabit'" : undefined),
});

/** Where the in-cluster portal goes unless `ui-exposure:portal.namespace` says otherwise. */
export const DEFAULT_PORTAL_NAMESPACE = "platform-portal";

/** Another cluster of the in-cluster portal: its name on the page and /metrics, and the Secret (in the portal's namespace) holding its credential. */
export const portalClusterSchema = z.strictObject({ name: dnsLabel("cluster name"), secret: dnsLabel("secret name", 253) });
export type PortalCluster = z.infer<typeof portalClusterSchema>;

const portalSchema = z.strictObject({
  enabled: flag(false),
  namespace: z._default(dnsLabel("namespace"), DEFAULT_PORTAL_NAMESPACE),
  /** A stock Node.js image; the server code ships in a ConfigMap. */
  image: z._default(z.string().check(z.regex(/^\S+$/, { message: "image must be an image reference without spaces (e.g. node:24-alpine)" })), "node:24-alpine"),
  /** false when the namespace already exists outside this stack (created by the platform's bootstrap). */
  createNamespace: flag(true),
  /** Do not wait for the portal's pods during `up`: only for clusters without a kubelet (the e2e harness); a real `up` fails if it never gets Ready. */
  skipAwait: flag(false),
  /** Other clusters the portal also shows, each through a Secret in the portal's namespace (docs/portal.md, "Other clusters"). */
  clusters: z._default(
    z
      .array(portalClusterSchema)
      .check(z.refine((list) => new Set(list.map((c) => c.name)).size === list.length, { message: "each cluster needs its own name" })),
    [],
  ),
});

const servicePattern = z.string().check(z.regex(/^[a-z0-9-]+\/[a-z0-9.*-]+$/, { message: "must be 'namespace/name' (name may end with '*')" }));
// The item's grammar is the exposure model's (it parses the items): one place for the rule.
const hostPortPattern = z.string().check(
  z.regex(HOST_PORT_ITEM.syntax, { message: `must be ${HOST_PORT_ITEM.forms}` }),
  // A port as a port: the admission policy compares it as a CEL int (beyond int64 it does not compile).
  z.refine((pattern) => !/:\d+$/.test(pattern) || allowlistPortOk(pattern.slice(pattern.lastIndexOf(":") + 1)), {
    error: (issue) => `must end with a port number between 1 and 65535 (${HOST_PORT_ITEM.forms}), found ${describeValue(issue.input)}`,
  }),
);

/** One allowlist item: the pattern alone, or `{ match, reason }` when the stack says why it is allowed (`exposure drift` prints the reason). */
function allowlistItem(match: typeof servicePattern) {
  return z.union([match, z.strictObject({ match, reason: z.string().check(z.minLength(1, { message: "must say why it is allowed" })) })], {
    error: (issue) => (issue.code === "invalid_union" ? "expected a pattern (a string) or { match, reason }" : undefined),
  });
}

/** Past this many items (or characters) in a list, the generated policy would near CEL's size and cost limits, where an error admits. */
const allowlistBoundMessage = `holds more than ${CHECK_LIMITS.allowlistItems} items or ${CHECK_LIMITS.allowlistCharacters.toLocaleString("en-US")} characters, the most the exposure guard checks within its bounded work: match several pods or Services with one prefix ('namespace/prefix*')`;
const allowlistBound = z.refine<AllowlistItem[]>(
  (items) =>
    items.length <= CHECK_LIMITS.allowlistItems &&
    items.reduce((n, i) => n + (typeof i === "string" ? i.length : typeof i?.match === "string" ? i.match.length : 0), 0) <= CHECK_LIMITS.allowlistCharacters,
  { message: allowlistBoundMessage },
);

type AllowlistItem = string | { match: string; reason: string };
const patternOf = (item: AllowlistItem) => (typeof item === "string" ? item : item.match);

const allowlistSchema = z.pipe(
  z.strictObject({
    /** Services of type NodePort/LoadBalancer that may exist without a contract entry: "namespace/name". */
    services: z._default(z.array(allowlistItem(servicePattern)).check(allowlistBound), []),
    /** Pods allowed to hold a hostPort without a contract entry: "namespace/workloadPrefix*:port" (a prefix also matches a pod's generateName). */
    hostPorts: z._default(z.array(allowlistItem(hostPortPattern)).check(allowlistBound), []),
  }),
  // The audit and the guard read patterns; the reasons are kept by pattern for the reports.
  z.transform((a) => ({
    services: a.services.map(patternOf),
    hostPorts: a.hostPorts.map(patternOf),
    reasons: Object.fromEntries([...a.services, ...a.hostPorts].flatMap((i) => (typeof i === "string" ? [] : [[i.match, i.reason]]))) as Record<string, string>,
  })),
);

/** The exposure guard at admission (src/core/admission.ts): `off` creates nothing; `warn`, `audit` and `deny` are the binding's validationActions. */
const admissionSchema = z.strictObject({
  mode: z._default(z.enum(["off", "warn", "audit", "deny"], { message: "mode must be 'off', 'warn', 'audit' or 'deny'" }), "off"),
  /** When the policy cannot be evaluated: `Ignore` admits (our mistake must never lock the cluster; drift still finds the object), `Fail` refuses. */
  failurePolicy: z._default(z.enum(["Fail", "Ignore"], { message: "failurePolicy must be 'Fail' or 'Ignore'" }), "Ignore"),
  /** Pods and workloads ('namespace/name', 'namespace/prefix*') deny may refuse when created again (denyWouldLock). */
  acknowledge: z._default(z.array(servicePattern), []),
});

/** The platform's kube-prometheus-stack watching the exposure (docs/monitoring.md); its objects carry `release: <release>`, the label it selects. */
const monitoringSchema = z.strictObject({
  enabled: flag(false),
  /** The kube-prometheus-stack Helm release name. */
  release: z._default(
    z
      .string()
      .check(
        z.regex(/^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/, { message: "must be a label value (the Helm release name, e.g. kube-prometheus-stack)" }),
        z.maxLength(63),
      ),
    "kube-prometheus-stack",
  ),
});

export const settingsSchema = z.strictObject({
  /** Contract file, relative to the project. Default: contract/endpoints.yaml, else the example. */
  contract: z.optional(z.string().check(z.minLength(1))),
  /** Which exposed entries this stack publishes: a list of names, or "all". */
  entries: z._default(
    z.union([z.literal("all"), z.array(entryName).check(z.minLength(1, { message: "must list at least one entry (or be 'all')" }))], {
      error: (issue) => (issue.code === "invalid_union" ? "expected 'all' or a list of entry names" : undefined),
    }),
    "all",
  ),
  /** Pin the node address used in URLs (otherwise: InternalIP of the first Ready node by name). */
  nodeAddress: z.optional(
    z.string().check(z.refine((s) => ipVersion(s) !== 0, { error: (issue) => `must be an IPv4 or IPv6 address, found ${describeValue(issue.input)}` })),
  ),
  cilium: ciliumSettingsSchema,
  portal: z._default(portalSchema, () => portalSchema.parse({})),
  allowlist: z._default(allowlistSchema, { services: [], hostPorts: [], reasons: {} }),
  admission: z._default(admissionSchema, { mode: "off", failurePolicy: "Ignore", acknowledge: [] }),
  monitoring: z._default(monitoringSchema, { enabled: false, release: "kube-prometheus-stack" }),
  /** Stacks with this set refuse Cilium `l4` unless `cilium.phase2Decided` is true. */
  production: flag(false),
  /** Allow entries whose Service (or hostPort pod) is in kube-system; refused by default. */
  allowKubeSystem: flag(false),
});

export type Settings = z.infer<typeof settingsSchema>;
export type CiliumSettings = z.infer<typeof ciliumSettingsSchema>;
export type L4CiliumSettings = z.infer<typeof l4Schema>;
export type CohabitCiliumSettings = z.infer<typeof cohabitSchema>;
/** `reasons` may be left out where nothing is shown (the guard, tests): no pattern then has one. */
export type Allowlist = Omit<z.output<typeof allowlistSchema>, "reasons"> & { reasons?: Record<string, string> };
export type PortalSettings = z.infer<typeof portalSchema>;
export type AdmissionSettings = z.infer<typeof admissionSchema>;

/** The allowlist as the in-cluster portal receives it (JSON in PORTAL_ALLOWLIST), checked like the stack's. */
export function parseAllowlist(value: unknown, where: string): Allowlist {
  const result = allowlistSchema.safeParse(value);
  if (!result.success) throw new UserError(`${where}: not an allowlist (${result.error.issues[0]?.message ?? "invalid"})`);
  return result.data;
}

/** Lines to add under `config:` for a setting a new stack must give (those without a default), with what to put there. */
export const REQUIRED_SETTING_LINES: Readonly<Record<string, readonly string[]>> = {
  "kubernetes:context": ["kubernetes:context: <context>        # the cluster's, from: kubectl config get-contexts -o name"],
  [`${PROJECT}:cilium`]: [`${PROJECT}:cilium:`, "  mode: cohabit                      # Cilium stays as installed; to manage it (l4), see docs/cilium.md"],
};

/** Every problem of a stack's `ui-exposure:*` settings, and the required settings it lacks. */
export interface SettingsCheck {
  settings?: Settings;
  /** One line each, `Pulumi.<stack>.yaml:L:C: key: what is wrong` where the key is in the file. */
  problems: string[];
  /** Required keys not set at all (keys of REQUIRED_SETTING_LINES). */
  missing: string[];
  /** The contract and the entries, when those two settings are valid (even if others are not). */
  selection?: Pick<Settings, "contract" | "entries">;
}

const selectionSchema = z.pick(settingsSchema, { contract: true, entries: true });

/** Checks the `ui-exposure:*` keys of the flat config map (`pulumi.runtime.allConfig()`'s shape: objects arrive as JSON text), every problem at once. */
export function checkSettings(config: Readonly<Record<string, string>>, positions: Readonly<Record<string, string>> = {}): SettingsCheck {
  const raw: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(config)) {
    if (!key.startsWith(`${PROJECT}:`)) continue;
    raw[key.slice(PROJECT.length + 1)] = decodeConfigValue(value);
  }
  // reportInput: a setting of the wrong type is told apart from a missing one by what it holds (secure: values are never read, so nothing secret can be
  // quoted).
  const result = settingsSchema.safeParse(raw, { reportInput: true });
  // `Pulumi.bench.yaml:7:3: ui-exposure:cilium.mode: ...` when the key is in the stack file: the place of the item itself (`allowlist.hostPorts[2]`) when
  // known, else of the nearest key above it.
  const at = (path: readonly PropertyKey[]) => {
    for (let n = path.length; n > 0; n--) {
      const where = positions[formatConfigPath(path.slice(0, n))];
      if (where) return `${where}: `;
    }
    return "";
  };
  if (result.success) {
    // Monitoring scrapes the in-cluster portal: one without the other is a problem of the stack file.
    if (result.data.monitoring.enabled && !result.data.portal.enabled) {
      const problem = `${at(["monitoring"])}${PROJECT}:monitoring.enabled: needs ${PROJECT}:portal.enabled: true (Prometheus scrapes the in-cluster portal's /metrics)`;
      return { problems: [problem], missing: [], selection: result.data };
    }
    return { settings: result.data, problems: [], missing: [], selection: result.data };
  }
  const missing: string[] = [];
  const problems = distinctIssues(expandUnions(result.error.issues)).map((issue) => {
    if (issue.code === "unrecognized_keys") {
      return `${at([...issue.path, ...issue.keys.slice(0, 1)])}${formatConfigPath(issue.path)}: unknown key${issue.keys.length > 1 ? "s" : ""} ${issue.keys.map((k) => `'${k}'`).join(", ")}`;
    }
    const key = issue.path.length === 1 ? `${PROJECT}:${String(issue.path[0])}` : undefined;
    if (key && issue.input === undefined && REQUIRED_SETTING_LINES[key]) missing.push(key);
    return `${at(issue.path)}${formatConfigPath(issue.path)}: ${describeZodIssue(issue, "required setting is missing")}`;
  });
  const selection = selectionSchema.safeParse(Object.fromEntries(Object.entries(raw).filter(([k]) => k === "contract" || k === "entries")));
  return { problems, missing, ...(selection.success ? { selection: selection.data } : {}) };
}

/** The one message for a stack's configuration problems, in the stack file's order, then the lines to add for each required setting it lacks. */
export function stackConfigError(stackFile: string, problems: readonly string[], missing: readonly string[] = []): UserError {
  const line = (problem: string) => {
    const m = /^[^\s]*:(\d+):(\d+): /.exec(problem);
    return m ? Number(m[1]) * 1e6 + Number(m[2]) : Number.MAX_SAFE_INTEGER;
  };
  const sorted = [...problems].sort((a, b) => line(a) - line(b));
  const error = userErrorFromProblems(`invalid stack configuration in ${stackFile}`, sorted);
  const lines = missing.flatMap((key) => REQUIRED_SETTING_LINES[key] ?? []);
  if (lines.length === 0) return error;
  return new UserError(`${error.message}\nadd under 'config:' in ${stackFile}:\n${lines.map((l) => `  ${l}`).join("\n")}`, error.exitCode);
}

function formatConfigPath(path: readonly PropertyKey[]): string {
  const [first, ...rest] = path;
  const head = first === undefined ? PROJECT : `${PROJECT}:${String(first)}`;
  return rest.length ? `${head}.${formatPath(rest)}`.replace(".[", "[") : head;
}

export function decodeConfigValue(value: string): unknown {
  const t = value.trim();
  if (!(t.startsWith("{") || t.startsWith("[") || t === "true" || t === "false" || /^-?\d+(\.\d+)?$/.test(t))) return value;
  try {
    return JSON.parse(t);
  } catch {
    return value;
  }
}

/** The cluster a stack deploys to and reads: its kubernetes:context (required) and kubernetes:kubeconfig, the keys the Kubernetes provider reads. */
export function stackKubeTarget(stack: string, config: Readonly<Record<string, string>>): { context: string; kubeconfig?: string } {
  const context = config["kubernetes:context"];
  const kubeconfig = config["kubernetes:kubeconfig"];
  if (!context) {
    throw new UserError(
      `stack ${stack}: kubernetes:context is not set in Pulumi.${stack}.yaml; set it (pulumi config set kubernetes:context <context> --stack ${stack}) so the stack never deploys to (or reads) whatever context is current`,
    );
  }
  return { context, ...(kubeconfig ? { kubeconfig } : {}) };
}
