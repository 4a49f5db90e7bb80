// Before components/program.ts declares anything: read what planning needs, once per kind, then decide (planStack, pure) what to declare or every reason not.
import { admissionApiProblem, admissionPolicyName, guardProbe, liveGuardUids } from "./admission";
import { denyWouldLock, readWorkloads } from "./admission-preview";
import { mayHoldHostPort } from "./audit";
import { type CiliumPlan, ciliumReads, planCilium } from "./cilium/plan";
import { type Inflate, readLiveRelease } from "./cilium/release";
import type { Contract, Endpoint } from "./contract/schema";
import { isExposingService, ourServiceName, ourServiceSpec } from "./exposure-model";
import { type ClusterReader, listCiliumEra } from "./kube/cluster";
import type { Service } from "./kube/types";
import { MONITORING_GROUP_VERSION, monitoringApiProblem } from "./monitoring";
import { fixedNameRefusal, guardTakeoverProblem, namespaceTakeoverRefusal, type StateUids, stateUids as stateUidsOf, upRefusals } from "./ownership";
import {
  type ExposurePlan,
  indexServices,
  type NodeChoice,
  type NodePortPlan,
  portToKeep,
  readHostPortPods,
  resolveExposures,
  serviceKey,
  withStackServices,
} from "./plan";
import { isPortalService, PORTAL_PUBLISHED, PORTAL_SERVICE_NAME, portalService } from "./portal/spec";
import type { PublishedEndpoints } from "./published";
import type { Settings } from "./settings";

/** A stack's inputs that need no cluster (opened by src/adapters/stack-inputs.ts). */
export interface StackInputs {
  stack: string;
  settings: Settings;
  contract: Contract;
  selected: string[];
  selectedEntries: Endpoint[];
}

/** This stack's own record, read only by the engine (components/engine.ts): the last up's `endpoints` output, the uids its state holds; none before an up. */
export interface StackRecord {
  lastEndpoints?: () => Promise<PublishedEndpoints>;
  stateUids?: () => Promise<StateUids>;
}

/** Every read planning needs, in parallel: the cluster (Services held only as far as planning reads them) and the stack's record. */
export async function readStack(cluster: ClusterReader, s: StackInputs, record: StackRecord, inflate: Inflate) {
  const { settings } = s;
  // In deny mode, every pod and workload template that may hold a host port is checked before deny is put in force (never lock the cluster).
  const deny = settings.admission.mode === "deny";
  const guardName = settings.admission.mode === "off" ? undefined : admissionPolicyName(s.stack);
  const reads = ciliumReads(settings.cilium);
  const portalNamespace = settings.portal.namespace;
  // Services kept as each page is read: the entries' own (vendored, ours), every one opening a port (nodePorts to keep, Cilium's LBs), the portal namespace's.
  const named = new Set(
    s.selectedEntries.flatMap((e) => (e.service ? [e.service.name, ourServiceName(e.name)].map((n) => `${e.service?.namespace}/${n}`) : [])),
  );
  const planned = (sv: Service) => named.has(serviceKey(sv)) || isExposingService(sv) || (settings.portal.enabled && sv.metadata.namespace === portalNamespace);
  const none = Promise.resolve(undefined);
  const read = await allOf({
    services: cluster.listServices({ keep: planned }),
    nodes: cluster.listNodes(),
    // Those holding a host port hold every hostPort entry's (planned from them).
    pods: deny ? cluster.listPods({ keep: mayHoldHostPort }) : readHostPortPods(cluster, s.selectedEntries),
    ciliumConfig: cluster.getConfigMap(reads.configMap.namespace, reads.configMap.name),
    ciliumEra: listCiliumEra(cluster),
    helmRelease: reads.release ? readLiveRelease(cluster, reads.release, inflate) : none,
    lastEndpoints: record.lastEndpoints ? record.lastEndpoints() : Promise.resolve<PublishedEndpoints>({}),
    publishedConfigMap: settings.portal.enabled ? cluster.getConfigMap(portalNamespace, PORTAL_PUBLISHED.configMap) : none,
    workloads: deny ? readWorkloads(cluster) : Promise.resolve({ workloads: [], unread: [] }),
    liveGuard: guardName ? liveGuardUids(cluster, guardName) : Promise.resolve({ policy: undefined, binding: undefined }),
    // The guard needs the ValidatingAdmissionPolicy API (Kubernetes >= 1.30); monitoring the Prometheus Operator's CRDs: a preview says so.
    admissionApi: guardName ? cluster.servedResources?.("admissionregistration.k8s.io/v1") : none,
    monitoringApi: settings.monitoring.enabled ? cluster.servedResources?.(MONITORING_GROUP_VERSION) : none,
  });
  // Only once an up has completed: the engine cannot read the state of a stack that has none yet (a guard is then not ours).
  const upCompleted = Object.keys(read.lastEndpoints).length > 0;
  const stateUids =
    record.stateUids && (upCompleted || read.liveGuard.policy || read.liveGuard.binding)
      ? await record.stateUids().catch((err) => (upCompleted ? Promise.reject(err) : stateUidsOf(undefined)))
      : stateUidsOf(undefined);
  return { ...read, stateUids, source: cluster.source };
}

/** Every promise of an object awaited in parallel: the object of their values. */
async function allOf<T extends Record<string, unknown>>(promises: T): Promise<{ [K in keyof T]: Awaited<T[K]> }> {
  return Object.fromEntries(await Promise.all(Object.entries(promises).map(async ([k, v]) => [k, await v]))) as { [K in keyof T]: Awaited<T[K]> };
}

/** One selected entry to declare: its plan, the nodePort to ask for again (or why it cannot be), whether it mirrors the portal (and so waits for it). */
export type ExposureDecision = { plan: ExposurePlan; keepNodePort?: number; note?: string; mirrorsPortal: boolean };

/** Why creating each of the portal's fixed-name objects would take one over (the takeover hooks'), and the warning when no entry publishes it. */
export type PortalDecision = { namespaceRefusal?: string; serviceRefusal?: string; publishedRefusal?: string; unpublished?: string };

export interface StackPlan {
  node: NodeChoice;
  cilium: CiliumPlan;
  exposures: ExposureDecision[];
  /** The Services read, by "namespace/name". */
  live: Map<string, Service>;
  /** When the portal is enabled. */
  portal?: PortalDecision;
}

/** What the stack declares, decided before anything is: every refusal (ownership, deny's lock, plans, Cilium, the APIs the cluster lacks) at once. */
export function planStack(s: StackInputs, r: Awaited<ReturnType<typeof readStack>>): StackPlan | { problems: string[] } {
  const { settings, stack } = s;
  const portalNamespace = settings.portal.namespace;
  // The portal's Service is created by this `up`, after planning reads: an entry mirroring it is planned from the Portal's own spec (one `up` does both).
  const withPortal = settings.portal.enabled ? withStackServices(r.services, [portalService(portalNamespace)]) : r.services;
  const resolution = resolveExposures(s.selectedEntries, { services: withPortal, nodes: r.nodes, pods: r.pods }, settings.nodeAddress, {
    allowKubeSystem: settings.allowKubeSystem,
  });
  const { ciliumConfig, helmRelease } = r;
  const observed = { services: r.services, ...r.ciliumEra, ...(ciliumConfig ? { ciliumConfig } : {}), ...(helmRelease ? { helmRelease } : {}) };
  const cilium = planCilium(settings.cilium, { stack, production: settings.production }, observed);
  const guarded = settings.admission.mode !== "off";
  const live = indexServices(r.services);
  const portalKey = `${portalNamespace}/${PORTAL_SERVICE_NAME}`;
  const lockInputs = { allowlist: settings.allowlist, pods: r.pods, acknowledge: settings.admission.acknowledge, stackFile: `Pulumi.${stack}.yaml` };
  const problems = [
    // Ownership (src/core/ownership.ts).
    ...upRefusals("plans" in resolution ? resolution.plans : [], live, r.lastEndpoints, settings.portal.enabled ? portalKey : undefined, r.stateUids),
    guarded ? guardTakeoverProblem(admissionPolicyName(stack), r.liveGuard, r.stateUids.guard) : undefined,
    settings.admission.mode === "deny" ? denyWouldLock({ ...s, ...r.workloads, ...lockInputs }) : undefined,
    ...("problems" in resolution ? resolution.problems : []),
    ...("problems" in cilium ? cilium.problems : []),
    guarded ? admissionApiProblem(r.admissionApi, r.source) : undefined,
    settings.monitoring.enabled ? monitoringApiProblem(r.monitoringApi, r.source) : undefined,
  ].filter((p): p is string => !!p);
  if (problems.length > 0 || "problems" in resolution || "problems" in cilium) return { problems };

  const mirrorsPortal = (p: ExposurePlan) =>
    settings.portal.enabled && p.kind === "nodePort" && isPortalService({ namespace: p.namespace, name: p.mirrors }, portalNamespace);
  const exposures = resolution.plans.map((plan): ExposureDecision => {
    const port = plan.kind === "nodePort" ? portToKeep(plan, r.lastEndpoints[plan.entry]?.nodePort, r.services) : {};
    return { plan, ...(port.keep !== undefined ? { keepNodePort: port.keep } : port.note ? { note: port.note } : {}), mirrorsPortal: mirrorsPortal(plan) };
  });
  const fixed = (kind: "Service" | "ConfigMap", resourceName: string, name: string, exists: boolean, held: ReadonlyMap<string, string>) =>
    fixedNameRefusal({ what: "portal", kind, resourceName, namespace: portalNamespace, name }, stack, exists, held);
  if (!settings.portal.enabled) return { node: resolution.node, cilium, exposures, live };
  const portal: PortalDecision = {
    ...(settings.portal.createNamespace ? { namespaceRefusal: namespaceTakeoverRefusal(portalNamespace, r.services) } : {}),
    serviceRefusal: fixed("Service", "portal-server-svc", PORTAL_SERVICE_NAME, live.has(portalKey), r.stateUids.services),
    publishedRefusal: fixed("ConfigMap", "portal-server-published", PORTAL_PUBLISHED.configMap, r.publishedConfigMap !== undefined, r.stateUids.configMaps),
  };
  if (!exposures.some((e) => e.mirrorsPortal)) {
    portal.unpublished = `the portal is deployed but not published: no selected contract entry mirrors Service ${portalKey} port http (add it to the contract and ui-exposure:entries)`;
  }
  return { node: resolution.node, cilium, exposures, live, portal };
}

/** What up dry-runs once its guard in deny is applied: our Services still to be created, to be admitted, and the probe only this stack's guard refuses. */
export function guardChecks(policyName: string, plans: readonly ExposurePlan[], existing: ReadonlyMap<string, unknown>) {
  const toCreate = plans
    .filter((p): p is NodePortPlan => p.kind === "nodePort" && !existing.has(`${p.namespace}/${p.serviceName}`))
    .map((p): Service => ({ metadata: { name: p.serviceName, namespace: p.namespace }, spec: ourServiceSpec(p) }));
  const namespace = ([...existing.keys()].find((k) => k.startsWith("default/")) ?? [...existing.keys()][0] ?? "default/").split("/")[0] ?? "default";
  const probe = guardProbe(policyName, namespace);
  return {
    checks: [...toCreate.map((service) => ({ service, admitted: true })), { service: probe, admitted: false }],
    probeKey: `${namespace}/${probe.metadata.name}`,
  };
}
