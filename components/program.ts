import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { LiveClusterReader } from "../src/adapters/kube-live";
import { bundlePortalServer } from "../src/adapters/portal-bundle";
import { openStack } from "../src/adapters/stack-inputs";
import { admissionApiProblem } from "../src/core/admission";
import { type CiliumSummary, ciliumReads, planCilium } from "../src/core/cilium/plan";
import { UserError, userErrorFromProblems } from "../src/core/errors";
import { recreatedProblem, type StateUids, stateUids as stateUidsOf } from "../src/core/exposure-model";
import { type ClusterReader, GATEWAYS, LB_IP_POOLS } from "../src/core/kube/cluster";
import { MONITORING_GROUP_VERSION, monitoringApiProblem } from "../src/core/monitoring";
import type { PublishedEndpoints } from "../src/core/observe";
import { buildUrl, type ExposurePlan, type NodeChoice, portToKeep, resolveExposures, takeoverRefusal, withStackServices } from "../src/core/plan";
import { isPortalService, namespaceTakeoverRefusal, PORTAL_PUBLISHED, PORTAL_SERVICE_NAME, portalService } from "../src/core/portal/spec";
import { stackKubeTarget } from "../src/core/settings";
import { labelledStack } from "../src/core/stack-label";
import { guardAdmission } from "./admission";
import { Cilium } from "./cilium";
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
  /**
   * The `endpoints` output of the last `up` (stable ports); default: read through a
   * StackReference to this same stack. Render and the unit tests pass their own.
   */
  lastEndpoints?: () => Promise<PublishedEndpoints>;
  /**
   * The uid of each Service and ConfigMap this stack's state held when `up` started;
   * default: read from the engine before any resource is declared (so before the refresh
   * re-reads them by name). Render and the unit tests pass their own.
   */
  stateUids?: () => Promise<StateUids>;
}

/** One record per published entry, as stack output. */
export interface EndpointRecord {
  exposure: "nodePort" | "hostPort";
  namespace: string;
  /** The vendored Service mirrored (nodePort entries). */
  mirrors?: string;
  /** Our NodePort Service (nodePort entries). */
  service?: string;
  /** Its uid: what proves, outside the engine, that the Service is the one this stack created. */
  uid?: string;
  nodePort?: number;
  hostPort?: number;
  /** Pod and node holding the hostPort (hostPort entries). */
  pod?: string;
  node?: string;
  url: string;
}

/**
 * Each cluster read of `preview`/`up` waits at most this long: with the start of the program,
 * a stack whose cluster does not answer fails within about 10 s with one message.
 */
export const PROGRAM_READ_TIMEOUT_MS = 5_000;

export interface StackOutputs {
  urls: pulumi.Output<Record<string, string>>;
  node: NodeChoice;
  endpoints: pulumi.Output<Record<string, EndpointRecord>>;
  cilium: pulumi.Output<CiliumSummary>;
  contract: string;
}

/**
 * The whole stack. Everything is validated and observed before the first resource is
 * declared, so an invalid contract, a missing Service or a failed guard changes nothing.
 */
export async function declareStack(inputs: ProgramInputs): Promise<StackOutputs> {
  const { config, settings, contract, contractFile, selected, selectedEntries } = openStack(inputs);
  const target = stackKubeTarget(inputs.stack, config);
  const cluster = inputs.cluster ?? (await LiveClusterReader.connect({ ...target, timeoutMs: PROGRAM_READ_TIMEOUT_MS }));
  const needPods = selectedEntries.some((e) => e.hostPort);
  const reads = ciliumReads(settings.cilium);
  // One list call per kind, in parallel, whatever the number of entries.
  const [services, nodes, pods, ciliumConfig, lbIpPools, gateways, lastEndpoints, publishedConfigMap] = await Promise.all([
    cluster.listServices(),
    cluster.listNodes(),
    needPods ? cluster.listPods() : Promise.resolve([]),
    reads.configMap ? cluster.getConfigMap(reads.configMap.namespace, reads.configMap.name) : Promise.resolve(undefined),
    cluster.listCustom(LB_IP_POOLS),
    cluster.listCustom(GATEWAYS),
    inputs.lastEndpoints ? inputs.lastEndpoints() : underEngine() ? readLastEndpoints() : Promise.resolve<PublishedEndpoints>({}),
    settings.portal.enabled ? cluster.getConfigMap(settings.portal.namespace, PORTAL_PUBLISHED.configMap) : Promise.resolve(undefined),
  ]);
  // Only once an up has completed: the engine cannot read the state of a stack that has none yet.
  const stateUids = inputs.stateUids
    ? await inputs.stateUids()
    : underEngine() && Object.keys(lastEndpoints).length > 0
      ? await readStateUids()
      : { services: new Map<string, string>(), configMaps: new Map<string, string>() };

  // The in-cluster portal's Service is created by this same `up`, but planning reads the cluster
  // before anything exists: the contract entry mirroring it is planned from the spec the Portal
  // component will create (the same pure function builds both), so enabling the portal and
  // publishing it takes one `up`. The component goes first in the dependency order (see publish).
  const planned = settings.portal.enabled ? withStackServices(services, [portalService(settings.portal.namespace)]) : services;
  const resolution = resolveExposures(selectedEntries, { services: planned, nodes, pods }, settings.nodeAddress, {
    allowKubeSystem: settings.allowKubeSystem,
  });
  const ciliumPlan = planCilium(
    settings.cilium,
    { stack: inputs.stack, production: settings.production },
    {
      services,
      lbIpPools,
      gateways,
      ...(ciliumConfig ? { ciliumConfig } : {}),
    },
  );
  // The guard needs the ValidatingAdmissionPolicy API (Kubernetes >= 1.30): a preview says so.
  const admissionIssue = settings.admission.mode === "off" ? undefined : admissionApiProblem(await cluster.admissionApiResources?.(), cluster.source);
  // Ownership by state: a Service of ours the state holds, re-created by hand since, is refused
  // before anything is declared (the refresh would read it by name and the update take it over).
  const live = new Map(services.map((s) => [`${s.metadata.namespace}/${s.metadata.name}`, s]));
  const fixedNames: [string, string][] = [
    ...("plans" in resolution
      ? resolution.plans.flatMap((p): [string, string][] => (p.kind === "nodePort" ? [[`entry '${p.entry}'`, `${p.namespace}/${p.serviceName}`]] : []))
      : []),
    ...(settings.portal.enabled ? [["portal", `${settings.portal.namespace}/${PORTAL_SERVICE_NAME}`] as [string, string]] : []),
  ];
  const recreated = fixedNames.flatMap(([what, key]) => recreatedProblem(what, live.get(key), stateUids.services.get(key)) ?? []);
  // The ServiceMonitor and PrometheusRule need the Prometheus Operator's CRDs: a preview says so.
  const monitoringIssue = settings.monitoring.enabled
    ? monitoringApiProblem(await cluster.servedResources?.(MONITORING_GROUP_VERSION), cluster.source)
    : undefined;
  const problems = [
    ...recreated,
    ...("problems" in resolution ? resolution.problems : []),
    ...("problems" in ciliumPlan ? ciliumPlan.problems : []),
    ...(admissionIssue ? [admissionIssue] : []),
    ...(monitoringIssue ? [monitoringIssue] : []),
  ];
  if (recreated.length > 0 || "problems" in resolution || "problems" in ciliumPlan || admissionIssue || monitoringIssue) {
    throw userErrorFromProblems(`stack ${inputs.stack} cannot be deployed (nothing was changed)`, problems);
  }

  const observedServices = new Set(services.map((s) => `${s.metadata.namespace}/${s.metadata.name}`));
  // Only to name, in a refusal, the stack a Service is labelled as published by.
  const labelledStacks = new Map(
    services.flatMap((s) => (labelledStack(s) ? [[`${s.metadata.namespace}/${s.metadata.name}`, labelledStack(s) as string] as const] : [])),
  );
  // The last thing that can fail, built before the first resource is declared: a failed bundle
  // must not leave the Cilium component (or anything) registered, i.e. `up` half-applied.
  const portalBundle = settings.portal.enabled ? bundlePortalServer() : undefined;

  // Every Kubernetes resource goes through this provider: the stack's own cluster, never the
  // default provider (which would follow whatever context is current where `pulumi up` runs).
  const kubernetes = new k8s.Provider("kubernetes", target);
  const withProvider = (opts?: pulumi.ComponentResourceOptions): pulumi.ComponentResourceOptions => ({ ...opts, providers: [kubernetes] });
  const cilium = new Cilium("cilium", { plan: ciliumPlan }, withProvider());
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
          ...(settings.portal.createNamespace ? { namespaceRefusal: namespaceTakeoverRefusal(settings.portal.namespace, services) } : {}),
          // A takeover is refused only for an object the state does not hold: the engine also runs the
          // create hook when it replaces one of ours (a ConfigMap whose data changed is replaced).
          ...(observedServices.has(`${settings.portal.namespace}/${PORTAL_SERVICE_NAME}`) &&
          !stateUids.services.has(`${settings.portal.namespace}/${PORTAL_SERVICE_NAME}`)
            ? {
                serviceRefusal: takeoverRefusal(
                  { what: "portal", kind: "Service", resourceName: "portal-server-svc", namespace: settings.portal.namespace, name: PORTAL_SERVICE_NAME },
                  inputs.stack,
                ),
              }
            : {}),
          ...(publishedConfigMap && !stateUids.configMaps.has(`${settings.portal.namespace}/${PORTAL_PUBLISHED.configMap}`)
            ? {
                publishedRefusal: takeoverRefusal(
                  {
                    what: "portal",
                    kind: "ConfigMap",
                    resourceName: "portal-server-published",
                    namespace: settings.portal.namespace,
                    name: PORTAL_PUBLISHED.configMap,
                  },
                  inputs.stack,
                ),
              }
            : {}),
          hooks: underEngine(),
        },
        withProvider(),
      )
    : undefined;
  // Monitoring needs the portal (settings refuse it otherwise): Prometheus scrapes its /metrics.
  if (portal && settings.monitoring.enabled) {
    new Monitoring(
      "monitoring",
      { target: { namespace: settings.portal.namespace, release: settings.monitoring.release, stack: inputs.stack }, namespace: portal.namespace },
      withProvider({ dependsOn: [portal] }),
    );
  }
  const mirrorsPortal = (plan: ExposurePlan) =>
    plan.kind === "nodePort" && isPortalService({ namespace: plan.namespace, name: plan.mirrors }, settings.portal.namespace);
  if (portal && !resolution.plans.some(mirrorsPortal)) {
    pulumi.log.warn(
      `the portal is deployed but not published: no selected contract entry mirrors Service ${settings.portal.namespace}/${PORTAL_SERVICE_NAME} port http (add it to the contract and ui-exposure:entries)`,
    );
  }
  // The NodePort Service mirroring the portal waits for the portal: it must not outlive a failed portal Service.
  const guard = guardAdmission(
    settings,
    { stack: inputs.stack, projectDir: inputs.projectDir, contract, contractFile, selected },
    cluster,
    resolution.plans,
    observedServices,
    withProvider(),
    underEngine(),
  );
  // Our NodePort Services are created only once the guard that must admit them is in effect.
  const published = resolution.plans.map((plan) => {
    let keepNodePort: number | undefined;
    if (plan.kind === "nodePort") {
      const decision = portToKeep(plan, lastEndpoints[plan.entry]?.nodePort, services);
      if (decision.keep === undefined && decision.note) pulumi.log.warn(decision.note);
      keepNodePort = decision.keep;
    }
    const dependsOn = [...(portal && mirrorsPortal(plan) ? [portal] : []), ...(guard ? [guard.effective] : [])];
    return publish(plan, resolution.node, {
      stack: inputs.stack,
      existing: observedServices,
      heldBy: labelledStacks,
      ...(keepNodePort !== undefined ? { keepNodePort } : {}),
      opts: withProvider(dependsOn.length ? { dependsOn } : undefined),
    });
  });

  const records = pulumi.all(Object.fromEntries(published.map((p) => [p.entry, p.record])));
  // The in-cluster portal judges against what this `up` published, as `exposure status` does.
  if (portal) portalPublished("portal-server-published", { portal, endpoints: records }, { provider: kubernetes });
  return {
    urls: records.apply((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, v.url]))),
    node: resolution.node,
    endpoints: records,
    cilium: cilium.summary,
    contract: contractFile,
  };
}

/**
 * Whether the real engine runs the program (not Pulumi's unit-test mocks, which can neither
 * read a stack reference nor register resource hooks; `exposure render` runs under them).
 */
export function underEngine(): boolean {
  const monitor = pulumi.runtime.getMonitor() as { registerResourceHook?: unknown } | undefined;
  return typeof monitor?.registerResourceHook === "function";
}

/** The stack's organization; the file backend's is "organization" (also what mocks without one get). */
function organization(): string {
  try {
    return pulumi.getOrganization();
  } catch {
    return "organization";
  }
}

/**
 * The uid of each Service in this stack's state, from the engine's own record of the stack
 * (the latest checkpoint, read before any resource of this `up` is registered, hence refreshed).
 */
async function readStateUids(): Promise<StateUids> {
  // The outputs hold references to resources (a component's children), which the SDK would turn
  // back into resources by asking the engine for them, and this deployment has none yet: the
  // references are asked for as plain URNs instead (the SDK reads this flag when it invokes).
  const sdk = require("@pulumi/pulumi/utils") as { disableResourceReferences: boolean };
  const before = sdk.disableResourceReferences;
  sdk.disableResourceReferences = true;
  try {
    const result = await pulumi.runtime.invoke("pulumi:pulumi:readStackResourceOutputs", {
      stackName: `${organization()}/${pulumi.getProject()}/${pulumi.getStack()}`,
    });
    return stateUidsOf((result as { outputs?: unknown } | undefined)?.outputs);
  } finally {
    sdk.disableResourceReferences = before;
  }
}

/**
 * The `endpoints` output of this stack's last `up`, through a StackReference to the stack
 * itself (works on every backend, the file one included). A reference is read, never
 * changed: the preview counts it as a read, not a change. Empty before the first `up`.
 */
async function readLastEndpoints(): Promise<PublishedEndpoints> {
  const self = new pulumi.StackReference("last-up", { name: `${organization()}/${pulumi.getProject()}/${pulumi.getStack()}` });
  const details = await self.getOutputDetails("endpoints");
  const value = details.value ?? details.secretValue;
  return value && typeof value === "object" ? (value as PublishedEndpoints) : {};
}

function publish(
  plan: ExposurePlan,
  node: NodeChoice,
  how: {
    stack: string;
    /** "namespace/name" of every Service observed in the cluster. */
    existing: ReadonlySet<string>;
    /** "namespace/name" -> the stack a Service is labelled as published by (labelledStack). */
    heldBy?: ReadonlyMap<string, string>;
    keepNodePort?: number;
    opts?: pulumi.ComponentResourceOptions;
  },
): { entry: string; record: pulumi.Output<EndpointRecord> } {
  if (plan.kind === "hostPort") {
    const url = buildUrl(plan.scheme, plan.address, plan.hostPort);
    return {
      entry: plan.entry,
      record: pulumi.output({ exposure: "hostPort" as const, namespace: plan.namespace, hostPort: plan.hostPort, pod: plan.pod, node: plan.node, url }),
    };
  }
  const exposure = new NodePortExposure(
    plan.entry,
    {
      plan,
      nodeAddress: node.address,
      stack: how.stack,
      existsInCluster: how.existing.has(`${plan.namespace}/${plan.serviceName}`),
      ...(how.heldBy?.has(`${plan.namespace}/${plan.serviceName}`) ? { heldBy: how.heldBy.get(`${plan.namespace}/${plan.serviceName}`) } : {}),
      hooks: underEngine(),
      ...(how.keepNodePort !== undefined ? { keepNodePort: how.keepNodePort } : {}),
    },
    how.opts,
  );
  return {
    entry: plan.entry,
    record: pulumi.all([exposure.nodePort, exposure.url, exposure.service.metadata.uid]).apply(([nodePort, url, uid]) => ({
      exposure: "nodePort" as const,
      namespace: plan.namespace,
      mirrors: plan.mirrors,
      service: plan.serviceName,
      ...(uid ? { uid } : {}),
      ...(nodePort !== undefined ? { nodePort } : {}),
      url,
    })),
  };
}

/**
 * Turns user errors into engine errors shown without a stack trace. The stack is replaced by
 * the message: the SDK's run loop still formats it (util.inspect, source maps of every frame)
 * for its trace span, which took about a minute of blocked event loop before the message
 * reached the engine.
 */
export function asRunError(err: unknown): never {
  if (err instanceof UserError) {
    const runError = new pulumi.RunError(err.message);
    runError.stack = `RunError: ${err.message}`;
    throw runError;
  }
  throw err;
}
