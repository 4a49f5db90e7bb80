import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { gunzipBounded } from "../src/adapters/gunzip";
import { LiveClusterReader } from "../src/adapters/kube-live";
import { bundlePortalServer } from "../src/adapters/portal-bundle";
import { openStack } from "../src/adapters/stack-inputs";
import { admissionApiProblem, admissionPolicyName, liveGuardUids } from "../src/core/admission";
import { denyWouldLock, readWorkloads } from "../src/core/admission-preview";
import { mayHoldHostPort } from "../src/core/audit";
import { ciliumReads, planCilium } from "../src/core/cilium/plan";
import { readLiveRelease } from "../src/core/cilium/release";
import { UserError, userErrorFromProblems } from "../src/core/errors";
import { isExposingService, ourServiceName } from "../src/core/exposure-model";
import { type ClusterReader, listCiliumEra } from "../src/core/kube/cluster";
import type { Service } from "../src/core/kube/types";
import { MONITORING_GROUP_VERSION, monitoringApiProblem } from "../src/core/monitoring";
import type { PublishedEndpoints } from "../src/core/observe";
import { fixedNameRefusal, guardTakeoverProblem, namespaceTakeoverRefusal, type StateUids, stateUids as stateUidsOf, upRefusals } from "../src/core/ownership";
import { buildUrl, type ExposurePlan, portToKeep, readHostPortPods, resolveExposures, withStackServices } from "../src/core/plan";
import { isPortalService, PORTAL_PUBLISHED, PORTAL_SERVICE_NAME, portalService } from "../src/core/portal/spec";
import { stackKubeTarget } from "../src/core/settings";
import { guardAdmission } from "./admission-guard";
import { Cilium } from "./cilium";
import { underEngine } from "./kubernetes-provider";
import { resolved } from "./mocks";
import { Monitoring } from "./monitoring";
import { NodePortExposure } from "./node-port-exposure";
import { Portal, portalPublished } from "./portal";

export interface ProgramInputs {
  /** Folder holding Pulumi.yaml; relative contract paths resolve against it. */
  projectDir: string;
  stack: string;
  /** Flat Pulumi config (`pulumi.runtime.allConfig()`); default: read from the stack file (`exposure render`). */
  config?: Readonly<Record<string, string>>;
  /** Replaces the stack's contract path (`exposure render --contract`). */
  contract?: string;
  /** Where to read the cluster; default: the live API through the stack's kube context. */
  cluster?: ClusterReader;
  /** The uids this stack's state holds, the `endpoints` output of its last `up`; default: read from the engine (unit tests pass their own). */
  stateUids?: () => Promise<StateUids>;
  lastEndpoints?: () => Promise<PublishedEndpoints>;
}

/** One record per published entry, as stack output (read back as one of PublishedEndpoints). */
interface EndpointRecord {
  exposure: "nodePort" | "hostPort";
  namespace: string;
  /** The vendored Service mirrored (nodePort entries). */
  mirrors?: string;
  /** Our NodePort Service (nodePort entries). */
  service?: string;
  /** Its uid: what proves, outside the engine, that the Service is the one this stack created. */
  uid?: string;
  /** The selector this up applied to it: what proves, at the next up, which keys this stack mirrored (a key the chart drops since is ours to drop). */
  selector?: Record<string, string>;
  nodePort?: number;
  hostPort?: number;
  /** Pod and node holding the hostPort (hostPort entries). */
  pod?: string;
  node?: string;
  url: string;
}

/**
 * Each cluster read of `preview`/`up` waits at most this long: with the start of the program, a stack whose cluster does not answer fails within about 10 s
 * with one message.
 */
export const PROGRAM_READ_TIMEOUT_MS = 5_000;

/**
 * The whole stack. The contract, the settings, the cluster reads, the Cilium plan (with its guard) and the takeover checks all pass before the first resource
 * is declared: any of them failing changes nothing. The admission guard's policy is checked by the API server once applied; its failure stops the update before
 * any of our Services is declared.
 */
export async function declareStack(inputs: ProgramInputs) {
  const { config, settings, contract, contractFile, selected, selectedEntries } = openStack(inputs);
  const target = stackKubeTarget(inputs.stack, config);
  const cluster = inputs.cluster ?? (await LiveClusterReader.connect({ ...target, timeoutMs: PROGRAM_READ_TIMEOUT_MS }));
  // In deny mode, every pod and workload template that may hold a host port is checked before deny is put in force (never lock the cluster).
  const deny = settings.admission.mode === "deny";
  const reads = ciliumReads(settings.cilium);
  const portalNamespace = settings.portal.namespace;
  // Services cluster-wide, page by page, holding only what planning reads: the entries' own (vendored and ours), every one that opens a port (nodePorts to
  // keep, LoadBalancers for Cilium), the portal namespace's.
  const named = new Set(selectedEntries.flatMap((e) => (e.service ? [e.service.name, ourServiceName(e.name)].map((n) => `${e.service?.namespace}/${n}`) : [])));
  const planned = (s: Service) =>
    named.has(`${s.metadata.namespace}/${s.metadata.name}`) || isExposingService(s) || (settings.portal.enabled && s.metadata.namespace === portalNamespace);
  const [services, nodes, pods, ciliumConfig, ciliumEra, helmRelease, lastEndpoints, publishedConfigMap, workloads] = await Promise.all([
    cluster.listServices({ keep: planned }),
    cluster.listNodes(),
    // Those holding a host port hold every hostPort entry's (planned from them).
    deny ? cluster.listPods({ keep: mayHoldHostPort }) : readHostPortPods(cluster, selectedEntries),
    reads.configMap ? cluster.getConfigMap(reads.configMap.namespace, reads.configMap.name) : Promise.resolve(undefined),
    listCiliumEra(cluster),
    reads.release ? readLiveRelease(cluster, reads.release, gunzipBounded) : Promise.resolve(undefined),
    inputs.lastEndpoints ? inputs.lastEndpoints() : underEngine() ? readLastEndpoints() : Promise.resolve<PublishedEndpoints>({}),
    settings.portal.enabled ? cluster.getConfigMap(portalNamespace, PORTAL_PUBLISHED.configMap) : Promise.resolve(undefined),
    deny ? readWorkloads(cluster) : Promise.resolve({ workloads: [], unread: [] }),
  ]);
  const guardName = settings.admission.mode === "off" ? undefined : admissionPolicyName(inputs.stack);
  const liveGuard: { policy?: string; binding?: string } = guardName ? await liveGuardUids(cluster, guardName) : {};
  // Only once an up has completed: the engine cannot read the state of a stack that has none yet (a guard is then not ours).
  const upCompleted = Object.keys(lastEndpoints).length > 0;
  const stateUids = inputs.stateUids
    ? await inputs.stateUids()
    : underEngine() && (upCompleted || liveGuard.policy || liveGuard.binding)
      ? await readStateUids().catch((err) => (upCompleted ? Promise.reject(err) : stateUidsOf(undefined)))
      : stateUidsOf(undefined);
  const guardTakeover = guardName && guardTakeoverProblem(guardName, liveGuard, stateUids.guard);

  // The in-cluster portal's Service is created by this same `up`, but planning reads the cluster before anything exists: the contract entry mirroring it is
  // planned from the spec the Portal component will create (the same pure function builds both), so enabling the portal and publishing it takes one `up`. The
  // component goes first in the dependency order (see below).
  const withPortal = settings.portal.enabled ? withStackServices(services, [portalService(portalNamespace)]) : services;
  const resolution = resolveExposures(selectedEntries, { services: withPortal, nodes, pods }, settings.nodeAddress, {
    allowKubeSystem: settings.allowKubeSystem,
  });
  const ciliumPlan = planCilium(
    settings.cilium,
    { stack: inputs.stack, production: settings.production },
    { services, ...ciliumEra, ...(ciliumConfig ? { ciliumConfig } : {}), ...(helmRelease ? { helmRelease } : {}) },
  );
  // The guard needs the ValidatingAdmissionPolicy API (Kubernetes >= 1.30): a preview says so.
  const admissionIssue =
    settings.admission.mode === "off" ? undefined : admissionApiProblem(await cluster.servedResources?.("admissionregistration.k8s.io/v1"), cluster.source);
  // Ownership (src/core/ownership.ts), decided before anything is declared.
  const live = new Map(services.map((s) => [`${s.metadata.namespace}/${s.metadata.name}`, s]));
  const portalKey = `${portalNamespace}/${PORTAL_SERVICE_NAME}`;
  const recreated = upRefusals("plans" in resolution ? resolution.plans : [], live, lastEndpoints, settings.portal.enabled ? portalKey : undefined, stateUids);
  // The ServiceMonitor and PrometheusRule need the Prometheus Operator's CRDs: a preview says so.
  const monitoringIssue = settings.monitoring.enabled
    ? monitoringApiProblem(await cluster.servedResources?.(MONITORING_GROUP_VERSION), cluster.source)
    : undefined;
  const stackFile = `Pulumi.${inputs.stack}.yaml`;
  const lock = deny
    ? denyWouldLock({ contract, selected, allowlist: settings.allowlist, pods, ...workloads, acknowledge: settings.admission.acknowledge, stackFile })
    : undefined;
  const problems = [
    ...recreated,
    ...(guardTakeover ? [guardTakeover] : []),
    ...(lock ? [lock] : []),
    ...("problems" in resolution ? resolution.problems : []),
    ...("problems" in ciliumPlan ? ciliumPlan.problems : []),
    ...(admissionIssue ? [admissionIssue] : []),
    ...(monitoringIssue ? [monitoringIssue] : []),
  ];
  if (recreated.length > 0 || guardTakeover || lock || "problems" in resolution || "problems" in ciliumPlan || admissionIssue || monitoringIssue) {
    throw userErrorFromProblems(`stack ${inputs.stack} cannot be deployed (nothing was changed)`, problems);
  }

  // The last thing that can fail, built before the first resource is declared: a failed bundle must not leave the Cilium component (or anything) registered,
  // i.e. `up` half-applied.
  const portalBundle = settings.portal.enabled ? bundlePortalServer() : undefined;

  // Every Kubernetes resource goes through this provider: the stack's own cluster, never the default provider (which would follow whatever context is current
  // where `pulumi up` runs).
  const kubernetes = new k8s.Provider("kubernetes", target);
  const withProvider = (opts?: pulumi.ComponentResourceOptions): pulumi.ComponentResourceOptions => ({ ...opts, providers: [kubernetes] });
  const release = ciliumPlan.mode === "l4" ? ciliumPlan.release : undefined;
  const workload = async (plural: string, kind: string, name: string) =>
    (await cluster.listCustom({ group: "apps", versions: ["v1"], plural, kind })).find(
      (o) => o.metadata.namespace === release?.namespace && o.metadata.name === name,
    );
  const readCiliumWorkloads =
    release && cluster instanceof LiveClusterReader
      ? async () => ({
          agents: await workload("daemonsets", "DaemonSet", "cilium"),
          operator: await workload("deployments", "Deployment", "cilium-operator"),
          pods: await cluster.listPods({ namespace: release.namespace }),
        })
      : undefined;
  const cilium = new Cilium(
    "cilium",
    { plan: ciliumPlan, logChanges: underEngine(), ...(readCiliumWorkloads ? { readWorkloads: readCiliumWorkloads } : {}) },
    withProvider(),
  );
  const portalRefusal = (kind: "Service" | "ConfigMap", resourceName: string, name: string, exists: boolean, held: ReadonlyMap<string, string>) =>
    fixedNameRefusal({ what: "portal", kind, resourceName, namespace: portalNamespace, name }, inputs.stack, exists, held);
  const portal = portalBundle
    ? new Portal(
        "portal-server",
        {
          bundle: portalBundle,
          settings: settings.portal,
          contract,
          entries: settings.entries,
          stack: inputs.stack,
          nodeAddress: settings.nodeAddress,
          ...(settings.monitoring.enabled ? { audit: settings.allowlist } : {}),
          ...(settings.portal.createNamespace ? { namespaceRefusal: namespaceTakeoverRefusal(portalNamespace, services) } : {}),
          serviceRefusal: portalRefusal("Service", "portal-server-svc", PORTAL_SERVICE_NAME, live.has(portalKey), stateUids.services),
        },
        withProvider(),
      )
    : undefined;
  // Monitoring needs the portal (settings refuse it otherwise): Prometheus scrapes its /metrics.
  if (portal && settings.monitoring.enabled) {
    new Monitoring(
      "monitoring",
      { target: { namespace: portalNamespace, release: settings.monitoring.release, stack: inputs.stack }, namespace: portal.namespace },
      withProvider({ dependsOn: [portal] }),
    );
  }
  const mirrorsPortal = (plan: ExposurePlan) => plan.kind === "nodePort" && isPortalService({ namespace: plan.namespace, name: plan.mirrors }, portalNamespace);
  if (portal && !resolution.plans.some(mirrorsPortal)) {
    pulumi.log.warn(
      `the portal is deployed but not published: no selected contract entry mirrors Service ${portalKey} port http (add it to the contract and ui-exposure:entries)`,
    );
  }
  const guard = guardAdmission(
    settings,
    { stack: inputs.stack, projectDir: inputs.projectDir, contract, contractFile, selected },
    cluster,
    resolution.plans,
    live,
    withProvider(),
  );
  // After a failed type check of the guard's policy (its binding applied with [Warn]), the update fails here with that one message, before any of our Services
  // is declared. The SDK fails an update on an unhandled error or on the program's own rejection, not on pulumi.log.error (pulumi/pulumi#6090): the program
  // rejects, so the engine shows the message alone, like every other refusal (asRunError).
  const refusal = guard ? await resolved(guard.refusal) : undefined;
  if (refusal) throw new UserError(refusal);

  // Our NodePort Services are created only once the guard that must admit them is in effect.
  const published = resolution.plans.map((plan): [string, pulumi.Output<EndpointRecord>] => {
    if (plan.kind === "hostPort") {
      const url = buildUrl(plan.scheme, plan.address, plan.hostPort);
      return [
        plan.entry,
        pulumi.output({ exposure: "hostPort" as const, namespace: plan.namespace, hostPort: plan.hostPort, pod: plan.pod, node: plan.node, url }),
      ];
    }
    const decision = portToKeep(plan, lastEndpoints[plan.entry]?.nodePort, services);
    if (decision.keep === undefined && decision.note) pulumi.log.warn(decision.note);
    // The NodePort Service mirroring the portal waits for the portal: it must not outlive a failed portal Service.
    const dependsOn = [...(portal && mirrorsPortal(plan) ? [portal] : []), ...(guard ? [guard.effective] : [])];
    const exposure = new NodePortExposure(
      plan.entry,
      {
        plan,
        nodeAddress: resolution.node.address,
        stack: inputs.stack,
        existing: live.get(`${plan.namespace}/${plan.serviceName}`),
        ...(decision.keep !== undefined ? { keepNodePort: decision.keep } : {}),
      },
      withProvider(dependsOn.length ? { dependsOn } : undefined),
    );
    const record = pulumi.all([exposure.nodePort, exposure.url, exposure.service.metadata.uid]).apply(([nodePort, url, uid]) => ({
      exposure: "nodePort" as const,
      namespace: plan.namespace,
      mirrors: plan.mirrors,
      service: plan.serviceName,
      // What proves, outside the engine, that the Service is the one this stack created.
      ...(uid ? { uid } : {}),
      // Written with the uid, once the Service is applied: the keys this up owns in its selector.
      selector: { ...plan.selector },
      ...(nodePort !== undefined ? { nodePort } : {}),
      url,
    }));
    return [plan.entry, record];
  });

  const records = pulumi.all(Object.fromEntries(published));
  // The in-cluster portal judges against what this `up` published, as `exposure status` does.
  if (portal) {
    const refusal = portalRefusal("ConfigMap", "portal-server-published", PORTAL_PUBLISHED.configMap, !!publishedConfigMap, stateUids.configMaps);
    portalPublished("portal-server-published", { portal, endpoints: records, refusal }, { provider: kubernetes });
  }
  return {
    urls: records.apply((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, v.url]))),
    node: resolution.node,
    endpoints: records,
    cilium: cilium.summary,
    contract: contractFile,
  };
}

/** This stack's fully qualified name; the file backend's organization is "organization" (also what mocks without one get). */
function thisStack(): string {
  let organization = "organization";
  try {
    organization = pulumi.getOrganization();
  } catch {}
  return `${organization}/${pulumi.getProject()}/${pulumi.getStack()}`;
}

/** The uid of each Service and ConfigMap in this stack's latest checkpoint (refreshed, if this up refreshes). */
async function readStateUids(): Promise<StateUids> {
  // The outputs hold references to resources (a component's children), which the SDK would turn back into resources by asking the engine for them, and this
  // deployment has none yet: the references are asked for as plain URNs instead (the SDK reads this flag when it invokes).
  const sdk = require("@pulumi/pulumi/utils") as { disableResourceReferences: boolean };
  const before = sdk.disableResourceReferences;
  sdk.disableResourceReferences = true;
  try {
    const result = await pulumi.runtime.invoke("pulumi:pulumi:readStackResourceOutputs", { stackName: thisStack() });
    return stateUidsOf((result as { outputs?: unknown } | undefined)?.outputs);
  } finally {
    sdk.disableResourceReferences = before;
  }
}

/**
 * The `endpoints` output of this stack's last `up`, through a StackReference to the stack itself (works on every backend, the file one included). A reference
 * is read, never changed: the preview counts it as a read, not a change. Empty before the first `up`.
 */
async function readLastEndpoints(): Promise<PublishedEndpoints> {
  const details = await new pulumi.StackReference("last-up", { name: thisStack() }).getOutputDetails("endpoints");
  const value = details.value ?? details.secretValue;
  return value && typeof value === "object" ? (value as PublishedEndpoints) : {};
}

/**
 * Turns user errors into engine errors shown without a stack trace. The stack is replaced by the message: the SDK's run loop still formats it (util.inspect,
 * source maps of every frame) for its trace span, which took about a minute of blocked event loop before the message reached the engine.
 */
export function asRunError(err: unknown): never {
  if (err instanceof UserError) {
    const runError = new pulumi.RunError(err.message);
    runError.stack = `RunError: ${err.message}`;
    throw runError;
  }
  throw err;
}
