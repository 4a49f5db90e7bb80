// Whether an object is this stack's, decided here alone: an entry's Service `<entry>-nodeport` is ours when its uid is
// the one the last finished `up` published (a refresh rewrites the state, never the outputs). The state says only whether
// the engine will create an object (the takeover hook refuses one that exists); a label says who claims, never decides.
import { type Contract, isNodePortEntry } from "./contract/schema";
import { field, matchesLabels } from "./exposure-rules";
import { isStackName } from "./inputs";
import { ENTRY_LABEL, MANAGED_BY_LABEL, MANAGED_BY_VALUE, type Service, STACK_LABEL } from "./kube/types";
import type { PublishedEndpoints } from "./published";

type EntryService = { entry: string; namespace: string; serviceName: string };
/** A plan of `up` (plan.ts's ExposurePlan, by shape: plan.ts imports the model, which asks this module). */
type EntryPlan = (EntryService & { kind: "nodePort"; selector: Readonly<Record<string, string>> }) | { kind: "hostPort" };
type Meta = Pick<Service, "metadata">;

/** Our Service of a NodePort entry: `<entry>-nodeport`, in the namespace of the Service it mirrors. */
const NODE_PORT_SUFFIX = "-nodeport";
export const ourServiceName = (entry: string) => `${entry}${NODE_PORT_SUFFIX}`;
/** Where our Service of a NodePort entry is, "namespace/<entry>-nodeport" (the name: ours only with the uid the last up published, ownershipProblem). */
export const ourServiceKey = (e: { name: string; service: { namespace: string } }) => `${e.service.namespace}/${ourServiceName(e.name)}`;
/** The Services named as ours, by "namespace/name": those of the published NodePort entries. */
export const ourServicesByName = (entries: Contract["endpoints"]) => new Map(entries.filter(isNodePortEntry).map((e) => [ourServiceKey(e), { entry: e.name }]));
/** The guard's CEL test that `object` presents itself as an entry's Service by its labels and name (`quote`: a CEL string literal). */
export const presentsAsOursCel = (quote: (s: string) => string) =>
  `has(object.metadata.labels) && ${quote(MANAGED_BY_LABEL)} in object.metadata.labels && object.metadata.labels[${quote(MANAGED_BY_LABEL)}] == ${quote(MANAGED_BY_VALUE)} && ${quote(ENTRY_LABEL)} in object.metadata.labels && variables.name == object.metadata.labels[${quote(ENTRY_LABEL)}] + ${quote(NODE_PORT_SUFFIX)}`;

/** Why a Service that opens something undeclared carries our labels (which never make it ours): it impersonates an entry, or claims one not published. */
export function labelClaimProblem(svc: Meta, ours: ReadonlyMap<string, { entry: string }>): string | undefined {
  const claimed = svc.metadata.labels?.[MANAGED_BY_LABEL] === MANAGED_BY_VALUE ? svc.metadata.labels?.[ENTRY_LABEL] : undefined;
  if (!claimed) return undefined;
  const own = [...ours].find(([, { entry }]) => entry === claimed)?.[0];
  return own
    ? `impersonates contract entry '${claimed}' (carries its labels, but that entry's Service is ${own} created by this stack): undeclared exposure; remove it`
    : `labelled as made by ui-exposure for entry '${claimed}', which this stack does not publish (left over from an earlier up or another stack?): delete it or select the entry`;
}

/** An object `up` creates under a fixed name: `what` asks ("entry 'argocd'", "portal"); `resourceName` is the URN's last part. */
export type FixedNameObject = { what: string; kind: "Service" | "ConfigMap"; resourceName: string; namespace: string; name: string };

/** The one form of `pulumi import` printed for adopting on purpose (at the stack's root, where the component's alias finds it; no prompt, unprotected). */
export function importCommand(type: string, resourceName: string, id: string, stack?: string): string {
  return `pulumi import ${type} ${resourceName} ${id}${stack ? ` --stack ${stack}` : ""} --generate-code=false --protect=false --yes`;
}

export const entryService = (p: EntryService): FixedNameObject => ({
  what: `entry '${p.entry}'`,
  kind: "Service",
  resourceName: `${p.entry}-svc`,
  namespace: p.namespace,
  name: p.serviceName,
});

/** Why `up` refuses to create an object that already exists without being in the stack's state. */
export function takeoverRefusal(o: FixedNameObject, stack: string): string {
  return (
    `${o.what}: ${o.kind} ${o.namespace}/${o.name} already exists and this stack did not create it; ` +
    `ui-exposure never takes over a ${o.kind} it did not create. Remove it (kubectl -n ${o.namespace} delete ${o.kind.toLowerCase()} ${o.name}), ` +
    `or adopt it on purpose: ${importCommand(`kubernetes:core/v1:${o.kind}`, o.resourceName, `${o.namespace}/${o.name}`, stack)}, then pulumi up`
  );
}

/** The takeover hook's refusal: none when nothing exists there or the state holds it (the engine also runs the create hook when it replaces one of ours). */
export const fixedNameRefusal = (o: FixedNameObject, stack: string, exists: boolean, held: ReadonlyMap<string, string>) =>
  exists && !held.has(`${o.namespace}/${o.name}`) ? takeoverRefusal(o, stack) : undefined;

/** The stack a Service is labelled as published by (a stack name, else undefined: the label is untrusted). */
export function labelledStack(service: Meta): string | undefined {
  const labels = service.metadata.labels;
  const stack = labels?.[STACK_LABEL];
  return labels?.[MANAGED_BY_LABEL] === MANAGED_BY_VALUE && typeof stack === "string" && isStackName(stack) ? stack : undefined;
}

/** Why `stack` cannot create an entry's Service that another stack (`holder`, by its label) publishes: choose the stack, never delete its Service. */
export function publishedByAnotherStack(plan: EntryService, stack: string, holder: string): string {
  return (
    `entry '${plan.entry}': Service ${plan.namespace}/${plan.serviceName} is labelled as published by ui-exposure stack '${holder}', and stack '${stack}' did not create it; ` +
    `one stack publishes an entry in a cluster. Drop '${plan.entry}' from ui-exposure:entries of stack '${stack}', ` +
    `or first drop it from stack '${holder}' (its ui-exposure:entries, then pulumi up --stack ${holder}); never delete another stack's Service by hand`
  );
}

/** Why an existing `<entry>-nodeport` is not created over: another stack's (by its label), or nobody's we know. */
export function existingServiceRefusal(plan: EntryService, stack: string, existing: Meta): string {
  const heldBy = labelledStack(existing);
  return heldBy !== undefined && heldBy !== stack ? publishedByAnotherStack(plan, stack, heldBy) : takeoverRefusal(entryService(plan), stack);
}

/** Why a live Service named like ours is not the one this stack recorded (`by`), with the command that removes it; undefined when it is or nothing tells. */
export function notPublishedService(service: Meta, recorded: { uid?: string } | undefined, by = "the last up published"): string | undefined {
  const { namespace, name, uid } = service.metadata;
  if (recorded?.uid === undefined || uid === undefined || recorded.uid === uid) return undefined;
  return `${namespace}/${name} is not the Service ${by} (its uid ${uid}; ${by} ${recorded.uid}); ui-exposure never takes over a Service it did not create: remove it (kubectl -n ${namespace} delete service ${name}), then pulumi up recreates this stack's own`;
}

/** Why a Service named like an entry's is not the one the last `up` published (none, or another uid): status, drift, the portal. */
export function ownershipProblem(service: Meta, published: PublishedEndpoints[string] | undefined): string | undefined {
  if (!published || (published.nodePort === undefined && published.service === undefined && published.url === undefined)) {
    const { namespace, name } = service.metadata;
    return `${namespace}/${name} exists but the last up published no Service for this entry: made outside this stack, it is never taken over: kubectl -n ${namespace} delete service ${name}, then pulumi up creates this stack's own (after an interrupted up that created it: pulumi up alone)`;
  }
  return notPublishedService(service, published);
}

/**
 * Our Service's selector keys beyond `wanted` (the vendored selector): `dropped`, published by the last up with this very value (`applied`), which up
 * drops; `foreign`, any other (added outside this stack, or unproven), which up refuses. Never decided from labels or field managers.
 */
export function selectorKeysBeyond(
  wanted: Readonly<Record<string, string>>,
  live: Service,
  applied: Readonly<Record<string, string>> | undefined,
): { dropped: string[]; foreign: string[] } {
  const selector = live.spec?.selector;
  const extra = Object.entries(selector && typeof selector === "object" ? selector : {}).filter(([k]) => !Object.hasOwn(wanted, k));
  // Published with this very value (an own key of the record: nothing inherited counts).
  const ours = ([k, v]: [string, string]) => applied !== undefined && Object.hasOwn(applied, k) && matchesLabels(applied, { [k]: v });
  return { dropped: extra.filter(ours).map(([k]) => k), foreign: extra.filter((e) => !ours(e)).map(([k]) => k) };
}

const selectorPairs = (live: Service, keys: readonly string[]) => keys.map((k) => `${k}=${live.spec?.selector?.[k]}`).join(", ");

/** Names the keys the last up mirrored from `vendored` ("ns/name") that its selector no longer has: `pulumi up` drops them. */
export function droppedSelectorProblem(live: Service, keys: readonly string[], vendored: string): string {
  const { namespace, name } = live.metadata;
  return `selector key ${selectorPairs(live, keys)} of ${namespace}/${name} was mirrored by the last up from ${vendored}, whose selector no longer has it (a chart upgrade): our Service may select no pod until pulumi up drops it`;
}

/** Names those keys and the command that removes them (JSON pointer: '~' and '/' escaped; a label key holds no quote). */
export function foreignSelectorProblem(live: Service, keys: readonly string[]): string {
  const { namespace, name } = live.metadata;
  const ops = keys.map((k) => `{"op":"remove","path":"/spec/selector/${k.replaceAll("~", "~0").replaceAll("/", "~1")}"}`).join(",");
  return `selector key ${selectorPairs(live, keys)} of ${namespace}/${name} was added outside this stack (traffic may go to other pods); remove it: kubectl -n ${namespace} patch service ${name} --type=json -p '[${ops}]'`;
}

/** What `up` refuses before declaring anything: an entry's Service of another uid than published, a foreign selector key, a portal Service not in the state. */
export function upRefusals(
  plans: readonly EntryPlan[],
  live: ReadonlyMap<string, Service>,
  published: PublishedEndpoints,
  portalKey: string | undefined,
  state: StateUids,
) {
  const refusals = plans.flatMap((p) => {
    const ours = p.kind === "nodePort" ? live.get(`${p.namespace}/${p.serviceName}`) : undefined;
    if (!ours || p.kind !== "nodePort") return [];
    const problem = notPublishedService(ours, published[p.entry]);
    const { foreign } = selectorKeysBeyond(p.selector, ours, published[p.entry]?.selector);
    if (problem) return [`entry '${p.entry}': Service ${problem}`];
    return foreign.length ? [`entry '${p.entry}': ${foreignSelectorProblem(ours, foreign)}, then pulumi up`] : [];
  });
  const portal = portalKey ? live.get(portalKey) : undefined;
  const portalProblem = portal && notPublishedService(portal, { uid: state.services.get(portalKey as string) }, "this stack's state holds");
  return portalProblem ? [...refusals, `portal: Service ${portalProblem}`] : refusals;
}

/** The uids of live Services named (namespace and name) as a published record says, that no record has. */
export function uidsUnknownTo(published: PublishedEndpoints, services: readonly Service[]): string[] {
  const records = Object.values(published);
  const keys = new Set(records.map((r) => `${String(field(r, "namespace"))}/${r.service}`));
  const uids = new Set(records.map((r) => r.uid));
  return services.flatMap((s) =>
    keys.has(`${s.metadata.namespace}/${s.metadata.name}`) && s.metadata.uid && !uids.has(s.metadata.uid) ? [s.metadata.uid] : [],
  );
}

/** Why the stack refuses to create the portal namespace that exists (it holds Services): server-side apply would adopt it. */
export function namespaceTakeoverRefusal(namespace: string, observed: readonly Service[]): string | undefined {
  const inside = observed.filter((s) => s.metadata.namespace === namespace).map((s) => s.metadata.name);
  if (inside.length === 0) return undefined;
  return `portal: namespace ${namespace} already exists (it holds Services ${inside.sort().join(", ")}) and this stack did not create it; set ui-exposure:portal.createNamespace: false (the stack then only adds its own objects there and never deletes the namespace), or choose another portal.namespace`;
}

/** The uids of the objects a state holds that `up` creates under fixed names, by "namespace/name". */
export type StateUids = ReturnType<typeof stateUids>;

/** The uids a state holds, from `pulumi:pulumi:readStackResourceOutputs` (untrusted); `guard`: those of the guard's objects (cluster-scoped). */
export function stateUids(resources: unknown) {
  const [services, configMaps, guard] = [new Map<string, string>(), new Map<string, string>(), new Set<string>()];
  const byType: Record<string, Map<string, string>> = { "kubernetes:core/v1:Service": services, "kubernetes:core/v1:ConfigMap": configMaps };
  for (const r of Object.values(resources !== null && typeof resources === "object" ? resources : {})) {
    const type = field(r, "type");
    const meta = field(field(r, "outputs"), "metadata");
    const [namespace, name, uid] = [field(meta, "namespace"), field(meta, "name"), field(meta, "uid")];
    if (typeof type === "string" && type.startsWith("kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy") && typeof uid === "string")
      guard.add(uid);
    const into = typeof type === "string" && Object.hasOwn(byType, type) ? byType[type] : undefined;
    if (into && typeof namespace === "string" && typeof name === "string" && typeof uid === "string") into.set(`${namespace}/${name}`, uid);
  }
  return { services, configMaps, guard };
}

/** Why `up` must not apply its guard `name`: the cluster holds a policy or binding of that name whose uid its state does not hold. */
export function guardTakeoverProblem(name: string, live: { policy?: string; binding?: string }, held: StateUids["guard"]): string | undefined {
  const foreign = (["policy", "binding"] as const).filter((k) => live[k] !== undefined && !held.has(live[k] as string));
  if (foreign.length === 0) return undefined;
  return `the exposure guard: ValidatingAdmission${foreign.map((k) => (k === "policy" ? "Policy" : "PolicyBinding")).join(" and ValidatingAdmission")} ${name} exists but this stack did not create it (another stack's guard: earlier versions named a guard by its stack lowercased, '_' as '-'; or one made by hand); ui-exposure never takes over what it did not create: run pulumi up in the stack that created it first (its guard moves to its own name), or remove one made by hand (kubectl delete validatingadmissionpolicy,validatingadmissionpolicybinding ${name}), then pulumi up`;
}
