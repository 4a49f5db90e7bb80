import * as z from "zod/mini";
import { labelKeyProblem, labelValueProblem } from "../kube/labels";
import "../zod-messages";

/** RFC 1123 label: what Kubernetes accepts for a namespace name; a Service port name (IANA_SVC_NAME) is checked with it too. */
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
/** RFC 1035 label: what Kubernetes accepts for a Service name (must start with a letter). */
const DNS_1035_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;

/** Our NodePort Service is named `<entry>-nodeport`; Service names stop at 63 characters. */
export const ENTRY_NAME_MAX = 63 - "-nodeport".length;

/** A Kubernetes name that must be a DNS label (a namespace...), `what` naming it in messages. */
export const dnsLabel = (what: string, max = 63) =>
  z
    .string()
    .check(
      z.maxLength(max, { message: `${what} must be at most ${max} characters` }),
      z.regex(DNS_LABEL, { message: `${what} must be a DNS label: lowercase letters, digits and '-', starting and ending with a letter or digit` }),
    );

export const entryName = z.string().check(
  z.maxLength(ENTRY_NAME_MAX, { message: `entry name must be at most ${ENTRY_NAME_MAX} characters (our Service is '<name>-nodeport')` }),
  z.regex(DNS_1035_LABEL, {
    message: "entry name must be a DNS label: lowercase letters, digits and '-', starting with a letter and ending with a letter or digit",
  }),
);

/** An integer from `min` to `max`, `message` said otherwise. */
export const intIn = (min: number, max: number, message: string, params?: { message: string }) =>
  z.int(params).check(z.minimum(min, { message }), z.maximum(max, { message }));

const portRef = z.union([
  intIn(1, 65535, "port number must be between 1 and 65535"),
  z
    .string()
    .check(
      z.maxLength(15, { message: "port name must be at most 15 characters" }),
      z.regex(DNS_LABEL, { message: "port name must be a Service port name (lowercase letters, digits, '-')" }),
    ),
]);

/** The existing (vendored) ClusterIP Service an entry mirrors or points at. */
const serviceRef = z.strictObject({
  namespace: dnsLabel("namespace"),
  name: dnsLabel("service name"),
  /** The Service's port, by name (preferred: names survive chart upgrades) or by number. */
  port: portRef,
});

/** Declared hostPort exposure for in-house bricks: a fixed port held by a pod. */
const hostPortExposure = z.strictObject({
  namespace: dnsLabel("namespace"),
  port: intIn(1, 65535, "hostPort must be between 1 and 65535", { message: "hostPort must be an integer" }),
  /** Labels that pick the pod holding the port (optional: any pod of the namespace holding it). */
  podSelector: z.optional(
    z.record(z.string(), z.string()).check(
      // As the API server validates labels: the admission policy matches these in CEL literals.
      z.superRefine((selector, ctx) => {
        for (const [key, value] of Object.entries(selector)) {
          const problem = labelKeyProblem(key) ?? labelValueProblem(value);
          if (problem) ctx.addIssue({ code: "custom", path: [key], message: problem, input: value });
        }
      }),
    ),
  ),
});

/** Longest probe path accepted (a path, not a document). */
const PROBE_PATH_MAX = 1024;

/** Why a probe path is not a plain path: `//host/x` or `http://host/x` would replace the URL's host (a dead URL reported "ok"); WHATWG reads `\` as `/`. */
export function probePathProblem(path: string): string | undefined {
  if (!path.startsWith("/")) return "probe path must start with '/' (a path on the published URL, not a URL)";
  if (path.startsWith("//")) return "probe path must not start with '//' (it would name another host)";
  if (path.includes("\\")) return "probe path must not contain a backslash";
  if (path.includes("//")) return "probe path must not contain '//'";
  if (path.length > PROBE_PATH_MAX) return `probe path must be at most ${PROBE_PATH_MAX} characters`;
  // Control characters, spaces and non-ASCII are percent-encoded by the author, never raw.
  if (!/^[\x21-\x7e]+$/.test(path)) return "probe path must be printable ASCII without spaces (percent-encode the rest)";
  return undefined;
}

const HTTP_STATUS = "expected an HTTP status between 100 and 599";
const PROBE_TIMEOUT = "expected a number of seconds above 0 and at most 120";

const nonEmpty = () => z.string().check(z.minLength(1));

const probeSpec = z.strictObject({
  path: z._default(z.string().check(z.refine((p) => probePathProblem(p) === undefined, { error: (issue) => probePathProblem(issue.input as string) })), "/"),
  /** Expected HTTP statuses; default any 2xx or 3xx. */
  expectStatus: z.optional(
    z.array(intIn(100, 599, HTTP_STATUS)).check(z.minLength(1, { message: "must list at least one status (omit it for any 2xx or 3xx)" })),
  ),
  timeoutSeconds: z.optional(z.number().check(z.positive({ message: PROBE_TIMEOUT }), z.maximum(120, { message: PROBE_TIMEOUT }))),
});

const credentialSpec = z.strictObject({
  label: nonEmpty(),
  secret: z.strictObject({ namespace: dnsLabel("namespace"), name: dnsLabel("secret name", 253) }),
  /** A fixed user name (Argo CD's `admin`), or the Secret key holding it. */
  username: z.optional(nonEmpty()),
  usernameKey: z.optional(nonEmpty()),
  passwordKey: nonEmpty(),
});

const endpointSchema = z
  .strictObject({
    name: entryName,
    description: z.optional(z.string()),
    /** Heading the portal lists the entry under ("Observability", "Data"...); ungrouped entries come last. */
    group: z.optional(
      z
        .string()
        .check(
          z.trim(),
          z.minLength(1, { message: "group must not be empty (omit it instead)" }),
          z.maxLength(63, { message: "group must be at most 63 characters" }),
        ),
    ),
    /** Publish at http(s)://<node IP>:<auto-allocated nodePort> (or the declared hostPort). */
    exposed: z._default(z.boolean(), false),
    scheme: z._default(z.enum(["http", "https", "postgresql", "tcp"]), "http"),
    service: z.optional(serviceRef),
    hostPort: z.optional(hostPortExposure),
    probe: z.optional(probeSpec),
    credentials: z.optional(z.array(credentialSpec)),
  })
  .check(
    z.superRefine(
      (e, ctx) => {
        if (e.service && e.hostPort) {
          ctx.addIssue({ code: "custom", path: ["hostPort"], message: "declare either 'service' (NodePort exposure) or 'hostPort', not both" });
        }
        if (!e.service && !e.hostPort) {
          ctx.addIssue({
            code: "custom",
            path: ["service"],
            message: "missing: name the existing Service ({namespace, name, port}) or, for an in-house brick, a 'hostPort'",
          });
        }
        if (e.hostPort && e.exposed !== true) {
          ctx.addIssue({ code: "custom", path: ["hostPort"], message: "'hostPort' is an exposure: set 'exposed: true' or remove it" });
        }
        // A scheme that is none of the known ones is already reported by the enum (one problem per field).
        if (e.exposed === true && (e.scheme === "postgresql" || e.scheme === "tcp")) {
          ctx.addIssue({ code: "custom", path: ["scheme"], message: `an exposed UI is served over http or https, not '${e.scheme}'` });
        }
      },
      // Also when a field has the wrong type (not to hide the entry's other problems): fields may then hold anything, hence the defensive checks.
      { when: (payload) => payload.value !== null && typeof payload.value === "object" && !Array.isArray(payload.value) },
    ),
  );

export const contractSchema = z
  .strictObject({
    version: z.literal(1, { message: "version must be 1" }),
    endpoints: z.array(endpointSchema).check(z.minLength(1, { message: "the contract declares no endpoint" })),
  })
  .check(
    z.superRefine((c, ctx) => {
      const seenNames = new Map<string, number>();
      const seenHostPorts = new Map<number, number>();
      c.endpoints.forEach((e, i) => {
        const first = seenNames.get(e.name);
        if (first !== undefined) {
          ctx.addIssue({ code: "custom", path: ["endpoints", i, "name"], message: `duplicate name '${e.name}' (first at endpoints[${first}])` });
        } else seenNames.set(e.name, i);
        if (e.hostPort) {
          const owner = seenHostPorts.get(e.hostPort.port);
          if (owner !== undefined) {
            ctx.addIssue({
              code: "custom",
              path: ["endpoints", i, "hostPort", "port"],
              message: `hostPort ${e.hostPort.port} is already declared by '${c.endpoints[owner]?.name}': each hostPort may be declared once`,
            });
          } else seenHostPorts.set(e.hostPort.port, i);
        }
      });
    }),
  );

export type Contract = z.infer<typeof contractSchema>;
export type Endpoint = z.infer<typeof endpointSchema>;
export type ServiceRef = z.infer<typeof serviceRef>;
export type HostPortExposure = z.infer<typeof hostPortExposure>;
export type Credential = z.infer<typeof credentialSpec>;

/** Keys that used to exist and now mean a misunderstanding; matched at any depth. */
export const FORBIDDEN_KEYS: Readonly<Record<string, string>> = {
  ui_hostname: "legacy key: UIs are no longer published under a hostname; set 'exposed: true' (the URL becomes http://<node IP>:<nodePort>)",
  ui_nodeport: "legacy key: nodePorts are now allocated by Kubernetes and observed, never declared; remove it and set 'exposed: true'",
  nodePort: "a nodePort is never written in the contract: Kubernetes allocates it (30000-32767) and ui-exposure reads it back; remove it",
  nodeport: "a nodePort is never written in the contract: Kubernetes allocates it (30000-32767) and ui-exposure reads it back; remove it",
  node_port: "a nodePort is never written in the contract: Kubernetes allocates it (30000-32767) and ui-exposure reads it back; remove it",
};

/** Whether an endpoint is published through our NodePort Service (vs a hostPort or not at all). */
export const isNodePortEntry = (e: Endpoint): e is Endpoint & { service: ServiceRef } => e.exposed && e.service !== undefined && e.hostPort === undefined;
export const isHostPortEntry = (e: Endpoint): e is Endpoint & { hostPort: HostPortExposure } => e.exposed && e.hostPort !== undefined;
