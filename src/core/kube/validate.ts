// The shape of what ui-exposure reads from a cluster, checked before any pure function sees it: a clear problem naming
// where it is, never a TypeError deep in a verdict. Only the fields the project reads are checked.
import * as z from "zod/mini";
import { describeZodIssue, distinctIssues, formatPath } from "../contract/parse";
import "../zod-messages";

const stringMap = z.record(z.string(), z.string());
const int = z.int();
const text = z.optional(z.string());

const metadata = z.looseObject({
  name: z.string().check(z.minLength(1)),
  namespace: text,
  labels: z.optional(stringMap),
  annotations: z.optional(stringMap),
  uid: text,
});
/** What every object has: its metadata, and the kind it says it is. */
const object = { apiVersion: text, kind: text, metadata };

const servicePort = z.looseObject({
  name: text,
  port: int,
  protocol: text,
  targetPort: z.optional(z.union([int, z.string()])),
  nodePort: z.optional(int),
});

const service = z.looseObject({
  ...object,
  spec: z.optional(
    z.looseObject({
      type: text,
      selector: z.optional(stringMap),
      ports: z.optional(z.array(servicePort)),
      clusterIP: text,
      externalIPs: z.optional(z.array(z.string())),
      externalTrafficPolicy: text,
      healthCheckNodePort: z.optional(int),
      externalName: text,
      loadBalancerClass: text,
    }),
  ),
  status: z.optional(z.looseObject({ loadBalancer: z.optional(z.looseObject({ ingress: z.optional(z.array(z.looseObject({ ip: text, hostname: text }))) })) })),
});

const condition = z.looseObject({ type: z.string(), status: z.string() });

const node = z.looseObject({
  ...object,
  spec: z.optional(z.looseObject({ unschedulable: z.optional(z.boolean()) })),
  status: z.optional(
    z.looseObject({
      addresses: z.optional(z.array(z.looseObject({ type: z.string(), address: z.string() }))),
      conditions: z.optional(z.array(condition)),
    }),
  ),
});

const containerPort = z.looseObject({ containerPort: int, hostPort: z.optional(int), name: text, protocol: text });
const container = z.looseObject({ name: z.string(), ports: z.optional(z.array(containerPort)) });

const pod = z.looseObject({
  ...object,
  spec: z.optional(
    z.looseObject({
      nodeName: text,
      hostNetwork: z.optional(z.boolean()),
      containers: z.optional(z.array(container)),
      initContainers: z.optional(z.array(container)),
      ephemeralContainers: z.optional(z.array(container)),
    }),
  ),
  status: z.optional(z.looseObject({ phase: text, podIP: text, hostIP: text, conditions: z.optional(z.array(condition)) })),
});

const endpointSlice = z.looseObject({
  ...object,
  // The API server writes `endpoints: null` for a slice with no endpoints (a Go nil slice).
  endpoints: z.nullish(
    z.array(
      z.looseObject({
        addresses: z.array(z.string()),
        conditions: z.optional(z.looseObject({ ready: z.optional(z.boolean()), serving: z.optional(z.boolean()), terminating: z.optional(z.boolean()) })),
      }),
    ),
  ),
  // Likewise `ports: null` for a slice whose Service has no ready endpoint to describe.
  ports: z.nullish(z.array(z.looseObject({ name: text, port: z.optional(int) }))),
});

const configMap = z.looseObject({ ...object, data: z.optional(stringMap) });
/** A Secret as the API returns it: `data` values are base64 (read only by `exposure access`). */
const secret = z.looseObject({ ...object, type: text, data: z.optional(stringMap) });
/** Any other object (CiliumLoadBalancerIPPool, Gateway, HTTPRoute...): metadata only is checked. */
const generic = z.looseObject({ ...object });

/** The objects as read: what each schema below accepts (fields it does not name pass through as unknown). */
export type Service = z.infer<typeof service>;
export type ServicePort = z.infer<typeof servicePort>;
export type Node = z.infer<typeof node>;
export type ContainerPort = z.infer<typeof containerPort>;
export type Pod = z.infer<typeof pod>;
export type EndpointSlice = z.infer<typeof endpointSlice>;
export type ConfigMap = z.infer<typeof configMap>;
export type Secret = z.infer<typeof secret>;
export type GenericObject = z.infer<typeof generic> & { apiVersion: string; kind: string; spec?: Record<string, unknown>; status?: Record<string, unknown> };

const SCHEMAS: Readonly<Record<string, z.ZodMiniType>> = {
  Service: service,
  Node: node,
  Pod: pod,
  EndpointSlice: endpointSlice,
  ConfigMap: configMap,
  Secret: secret,
};

/** One problem in an object read from the cluster: where (path from the list or document root) and what. */
export interface ObjectProblem {
  path: (string | number)[];
  message: string;
}

/** What a value is, for "found ..." (never the value itself: it may come from a Secret). */
const found = (value: unknown) => (value === null ? "null" : Array.isArray(value) ? "an array" : `a ${typeof value}`);

/** Checks one object of `kind` (other kinds: metadata only). A Secret's values are never described, only their type: no message carries a fragment. */
export function checkObject(kind: string, value: unknown, at: (string | number)[] = []): ObjectProblem[] {
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    return [{ path: at, message: `expected a Kubernetes object (a map), found ${found(value)}` }];
  }
  const schema = SCHEMAS[kind] ?? generic;
  const redact = kind === "Secret";
  const result = schema.safeParse(value, { reportInput: !redact });
  if (result.success) return [];
  return distinctIssues(result.error.issues).map((issue) => ({
    path: [...at, ...(issue.path as (string | number)[])],
    message: redact ? redactedMessage(issue) : describeZodIssue(issue, "required field is missing"),
  }));
}

function redactedMessage(issue: z.core.$ZodIssue): string {
  if (issue.code === "invalid_type")
    return `expected ${issue.expected === "object" ? "a map" : `a ${issue.expected}`} (value not shown: it is read from a Secret)`;
  return "invalid (value not shown: it is read from a Secret)";
}

/** `items[3].spec.ports: expected an array, found a string ("80")` */
export function formatObjectProblem(p: ObjectProblem): string {
  return `${formatPath(p.path) || "(object)"}: ${p.message}`;
}

/** Lists problems, the first `max` of them (one message stays readable), and how many more there are. */
export function summarizeProblems(lines: readonly string[], max = 20): string[] {
  if (lines.length <= max) return [...lines];
  return [...lines.slice(0, max), `... and ${lines.length - max} more problems`];
}

/** Problems (at least one), summarized, as the indented list of a message. */
export const problemList = (lines: readonly string[]) => `  - ${summarizeProblems(lines).join("\n  - ")}`;

const isList = (o: { kind?: unknown }) => typeof o.kind === "string" && (o.kind === "List" || o.kind.endsWith("List"));

/** The items of a List, or the problem when they are not an array (`items: null` is not an empty list). */
function listItems(list: { items?: unknown }, at: (string | number)[]): unknown[] | ObjectProblem {
  if (Array.isArray(list.items)) return list.items;
  return { path: [...at, "items"], message: `expected an array, found ${list.items === undefined ? "nothing" : found(list.items)}` };
}

/** One YAML document of a snapshot: an object, or a List (`kind: List` or `XList`) of them; a bare array, `items: null` or a null item is a problem. */
export function checkSnapshotDocument(value: unknown, at: (string | number)[] = [], itemKind?: string): ObjectProblem[] {
  if (Array.isArray(value)) {
    return [{ path: at, message: "expected a Kubernetes object or a List, found an array (wrap the objects as `kind: List` with `items:`)" }];
  }
  if (value === null || typeof value !== "object") return checkObject(itemKind ?? "", value, at);
  const obj = value as { kind?: unknown; items?: unknown };
  if (isList(obj)) {
    const items = listItems(obj, at);
    if (!Array.isArray(items)) return [items];
    const kind = obj.kind as string;
    const inner = kind !== "List" ? kind.slice(0, -"List".length) : undefined;
    return items.flatMap((item, i) => checkSnapshotDocument(item, [...at, "items", i], inner));
  }
  if (obj.kind !== undefined && typeof obj.kind !== "string") return [{ path: [...at, "kind"], message: "expected a string" }];
  return checkObject((obj.kind as string | undefined) ?? itemKind ?? "", value, at);
}

/** The items of a List answer checked one by one; `items: null`, a bare array or a missing `items` is a problem, not an empty list. */
export function checkListAnswer(kind: string, body: unknown): { items: unknown[] } | { problems: ObjectProblem[] } {
  if (body === null || typeof body !== "object" || Array.isArray(body)) {
    return { problems: [{ path: [], message: `expected a ${kind}List (a map with items), found ${found(body)}` }] };
  }
  const items = listItems(body, []);
  if (!Array.isArray(items)) return { problems: [items] };
  const problems = items.flatMap((item, i) => checkObject(kind, item, ["items", i]));
  return problems.length ? { problems } : { items };
}
