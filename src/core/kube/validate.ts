// The shape of what ui-exposure reads from a cluster (API answers, snapshot files), checked
// before any pure function sees it: an object without metadata, `ports: "80"`, a null item or
// `addresses: "x"` is a clear problem naming where it is, never a TypeError deep in a verdict.
// Only the fields the project reads are checked; everything else passes through untouched.
import { z } from "zod";
import { describeZodIssue, formatPath } from "../contract/parse";

const stringMap = z.record(z.string(), z.string());
const int = z.number().int();

const metadata = z.looseObject({
  name: z.string().min(1),
  namespace: z.string().optional(),
  labels: stringMap.optional(),
  annotations: stringMap.optional(),
});

const servicePort = z.looseObject({
  name: z.string().optional(),
  port: int,
  protocol: z.string().optional(),
  targetPort: z.union([int, z.string()]).optional(),
  nodePort: int.optional(),
});

const service = z.looseObject({
  metadata,
  spec: z
    .looseObject({
      type: z.string().optional(),
      selector: stringMap.optional(),
      ports: z.array(servicePort).optional(),
      clusterIP: z.string().optional(),
      externalTrafficPolicy: z.string().optional(),
      externalName: z.string().optional(),
    })
    .optional(),
});

const condition = z.looseObject({ type: z.string(), status: z.string() });

const node = z.looseObject({
  metadata,
  spec: z.looseObject({ unschedulable: z.boolean().optional() }).optional(),
  status: z
    .looseObject({
      addresses: z.array(z.looseObject({ type: z.string(), address: z.string() })).optional(),
      conditions: z.array(condition).optional(),
    })
    .optional(),
});

const containerPort = z.looseObject({ containerPort: int, hostPort: int.optional(), name: z.string().optional(), protocol: z.string().optional() });
const container = z.looseObject({ name: z.string(), ports: z.array(containerPort).optional() });

const pod = z.looseObject({
  metadata,
  spec: z
    .looseObject({
      nodeName: z.string().optional(),
      containers: z.array(container).optional(),
      initContainers: z.array(container).optional(),
    })
    .optional(),
  status: z.looseObject({ phase: z.string().optional(), conditions: z.array(condition).optional() }).optional(),
});

const endpointSlice = z.looseObject({
  metadata,
  // The API server writes `endpoints: null` for a slice with no endpoints (a Go nil slice).
  endpoints: z
    .array(
      z.looseObject({
        addresses: z.array(z.string()),
        conditions: z.looseObject({ ready: z.boolean().optional(), serving: z.boolean().optional(), terminating: z.boolean().optional() }).optional(),
      }),
    )
    .nullish(),
});

const configMap = z.looseObject({ metadata, data: stringMap.optional() });
const secret = z.looseObject({ metadata, data: stringMap.optional() });
const generic = z.looseObject({ metadata });

const SCHEMAS: Readonly<Record<string, z.ZodType>> = {
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

/**
 * Checks one object of `kind` (any other kind: metadata only). Secret values are never
 * described, only their type: an error message must not carry a fragment of a Secret.
 */
export function checkObject(kind: string, value: unknown, at: (string | number)[] = []): ObjectProblem[] {
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    return [
      { path: at, message: `expected a Kubernetes object (a map), found ${value === null ? "null" : Array.isArray(value) ? "an array" : `a ${typeof value}`}` },
    ];
  }
  const schema = SCHEMAS[kind] ?? generic;
  const redact = kind === "Secret";
  const result = schema.safeParse(value, { reportInput: !redact });
  if (result.success) return [];
  return result.error.issues.map((issue) => ({
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

/** At most this many problems are listed in one message; the rest are counted. */
export const MAX_PROBLEMS_SHOWN = 20;

/** Lists problems, the first MAX_PROBLEMS_SHOWN of them, and how many more there are. */
export function summarizeProblems(lines: readonly string[], max = MAX_PROBLEMS_SHOWN): string[] {
  if (lines.length <= max) return [...lines];
  return [...lines.slice(0, max), `... and ${lines.length - max} more problems`];
}

const isList = (o: { kind?: unknown }) => typeof o.kind === "string" && (o.kind === "List" || o.kind.endsWith("List"));

/**
 * One YAML document of a snapshot: an object, or a List (`kind: List` or `XList`) of them, as
 * `kubectl get -o yaml` prints. A bare array, `items: null` or a null item is a problem.
 */
export function checkSnapshotDocument(value: unknown, at: (string | number)[] = [], itemKind?: string): ObjectProblem[] {
  if (Array.isArray(value)) {
    return [{ path: at, message: "expected a Kubernetes object or a List, found an array (wrap the objects as `kind: List` with `items:`)" }];
  }
  if (value === null || typeof value !== "object") return checkObject(itemKind ?? "", value, at);
  const obj = value as { kind?: unknown; items?: unknown };
  if (isList(obj)) {
    if (!Array.isArray(obj.items)) {
      return [
        {
          path: [...at, "items"],
          message: `expected an array, found ${obj.items === null ? "null" : obj.items === undefined ? "nothing" : `a ${typeof obj.items}`}`,
        },
      ];
    }
    const kind = obj.kind as string;
    const inner = kind !== "List" ? kind.slice(0, -"List".length) : undefined;
    return obj.items.flatMap((item, i) => checkSnapshotDocument(item, [...at, "items", i], inner));
  }
  if (obj.kind !== undefined && typeof obj.kind !== "string") return [{ path: [...at, "kind"], message: "expected a string" }];
  return checkObject((obj.kind as string | undefined) ?? itemKind ?? "", value, at);
}

/**
 * The items of a List answer (`{kind: XList, items: [...]}`) checked one by one; `items: null`,
 * a bare array or a missing `items` is a problem, not an empty list.
 */
export function checkListAnswer(kind: string, body: unknown): { items: unknown[] } | { problems: ObjectProblem[] } {
  if (body === null || typeof body !== "object" || Array.isArray(body)) {
    return {
      problems: [
        {
          path: [],
          message: `expected a ${kind}List (a map with items), found ${body === null ? "null" : Array.isArray(body) ? "an array" : `a ${typeof body}`}`,
        },
      ],
    };
  }
  const items = (body as { items?: unknown }).items;
  if (!Array.isArray(items)) {
    return {
      problems: [{ path: ["items"], message: `expected an array, found ${items === null ? "null" : items === undefined ? "nothing" : `a ${typeof items}`}` }],
    };
  }
  const problems = items.flatMap((item, i) => checkObject(kind, item, ["items", i]));
  return problems.length ? { problems } : { items };
}
