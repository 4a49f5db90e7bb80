import * as z from "zod/mini";
import { describeZodIssue, formatPath } from "./contract/parse";
import { UserError } from "./errors";
import { labelKeyProblem } from "./kube/labels";
import { shownValue } from "./text";
import "./zod-messages";

// What the last `up` published (`endpoints`), from stack output, a file or the portal's ConfigMap; untrusted: a wrong field is an error, never a verdict.
const port = z.int().check(z.minimum(1), z.maximum(65535));
/** Label limits (a key: a 253-character DNS prefix, '/', a 63-character name; a value: 63): a selector an up applied never exceeds them. */
const LABEL_KEY_MAX = 317;
const LABEL_VALUE_MAX = 63;
const labelValue = z.string().check(z.maxLength(LABEL_VALUE_MAX, `longer than a label value (${LABEL_VALUE_MAX} characters)`));
const selector = z
  .record(z.string(), labelValue)
  .check(z.refine((s) => Object.keys(s).every((k) => k.length <= LABEL_KEY_MAX), `a key longer than a label key (${LABEL_KEY_MAX} characters)`));
/** Longest published text kept as read (a URL `up` publishes, a Service name and a uid are far shorter); anything longer is cut when read. */
export const PUBLISHED_TEXT_MAX = 256;
/** A published text as read: escaped and cut (`shownValue`), so a forged line break starts no row of its own. */
const shownText = z.string().check(z.overwrite((s) => shownValue(s, PUBLISHED_TEXT_MAX)));
const record = z.looseObject({
  nodePort: z.optional(port),
  hostPort: z.optional(port),
  url: z.optional(shownText),
  service: z.optional(shownText),
  uid: z.optional(shownText),
  /** The selector that up applied to our Service: which keys this stack mirrored (issue 39 #3). Compared with the live one, never printed. */
  selector: z.optional(selector),
});
const schema = z.record(z.string(), record);
/** What the last `up` published, by entry (the `endpoints` output). */
export type PublishedEndpoints = z.infer<typeof schema>;

/** The published endpoints in `value` (`source` names them), their texts escaped and cut. */
export function parsePublishedEndpoints(value: unknown, source: string): PublishedEndpoints {
  const result = schema.safeParse(value, { reportInput: true });
  const badKey = result.success ? selectorKeyProblem(value) : undefined;
  if (badKey) throw new UserError(`${source}: ${badKey}`);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const where = issue ? formatPath(["endpoints", ...issue.path]) : "endpoints";
  throw new UserError(`${source}: ${where}: ${issue ? describeZodIssue(issue) : "not a map of published endpoints"}`);
}

/** The first raw selector key that is not a label key (up never writes one), from the input's own keys: a map built from them drops `__proto__` silently. */
function selectorKeyProblem(value: unknown): string | undefined {
  for (const [name, record] of Object.entries(value as Record<string, unknown>)) {
    const sel = (record as { selector?: unknown }).selector;
    if (sel === null || typeof sel !== "object") continue;
    for (const key of Object.keys(sel)) {
      const problem = labelKeyProblem(key);
      if (problem) return `${formatPath(["endpoints", name, "selector"])}: ${problem}`;
    }
  }
  return undefined;
}

/** The `endpoints` output of a set of stack outputs ({} when the stack published none). */
export function publishedFromOutputs(outputs: Readonly<Record<string, unknown>>, source: string): PublishedEndpoints {
  return outputs.endpoints === undefined ? {} : parsePublishedEndpoints(outputs.endpoints, source);
}
