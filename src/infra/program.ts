import * as pulumi from "@pulumi/pulumi";
import { Cilium } from "../../components/cilium";
import { NodePortExposure } from "../../components/node-port-exposure";
import { Portal } from "../../components/portal";
import { LiveClusterReader } from "../adapters/kube-live";
import { loadInputs } from "../adapters/stack-inputs";
import { type CiliumSummary, ciliumReads, planCilium } from "../core/cilium/plan";
import { UserError, userErrorFromProblems } from "../core/errors";
import { type ClusterReader, GATEWAYS, LB_IP_POOLS } from "../core/kube/cluster";
import { buildUrl, type ExposurePlan, type NodeChoice, resolveExposures, selectEntries, withStackServices } from "../core/plan";
import { PORTAL_SERVICE_NAME, portalProblems, portalService } from "../core/portal/spec";
import { kubeTarget } from "../core/settings";

export interface ProgramInputs {
  /** Folder holding Pulumi.yaml; relative contract paths resolve against it. */
  projectDir: string;
  stack: string;
  /** Flat Pulumi config (`pulumi.runtime.allConfig()`). */
  config: Readonly<Record<string, string>>;
  /** Where to read the cluster; default: the live API through the stack's kube context. */
  cluster?: ClusterReader;
}

/** One record per published entry, as stack output. */
export interface EndpointRecord {
  exposure: "nodePort" | "hostPort";
  namespace: string;
  /** The vendored Service mirrored (nodePort entries). */
  mirrors?: string;
  /** Our NodePort Service (nodePort entries). */
  service?: string;
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
export async function uiExposure(inputs: ProgramInputs): Promise<StackOutputs> {
  const { settings, contract, contractFile } = loadInputs(inputs);
  const selection = selectEntries(contract, settings.entries);
  if (selection.problems.length) throw userErrorFromProblems(`stack ${inputs.stack}`, selection.problems);

  const cluster = inputs.cluster ?? (await LiveClusterReader.connect({ ...kubeTarget(inputs.config), timeoutMs: PROGRAM_READ_TIMEOUT_MS }));
  const needPods = selection.entries.some((e) => e.hostPort);
  const reads = ciliumReads(settings.cilium);
  // One list call per kind, in parallel, whatever the number of entries.
  const [services, nodes, pods, ciliumConfig, lbIpPools, gateways] = await Promise.all([
    cluster.listServices(),
    cluster.listNodes(),
    needPods ? cluster.listPods() : Promise.resolve([]),
    reads.configMap ? cluster.getConfigMap(reads.configMap.namespace, reads.configMap.name) : Promise.resolve(undefined),
    reads.customObjects ? cluster.listCustom(LB_IP_POOLS) : Promise.resolve([]),
    reads.customObjects ? cluster.listCustom(GATEWAYS) : Promise.resolve([]),
  ]);

  // The in-cluster portal's Service is created by this same `up`, but planning reads the cluster
  // before anything exists: the contract entry mirroring it is planned from the spec the Portal
  // component will create (the same pure function builds both), so enabling the portal and
  // publishing it takes one `up`. The component goes first in the dependency order (see publish).
  const planned = settings.portal.enabled ? withStackServices(services, [portalService(settings.portal.namespace)]) : { services: [...services], problems: [] };
  const portalIssues = settings.portal.enabled ? [...planned.problems.map((p) => `portal: ${p}`), ...portalProblems(settings.portal, services)] : [];
  const resolution = resolveExposures(selection.entries, { services: planned.services, nodes, pods }, settings.nodeAddress);
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
  const problems = [...("problems" in resolution ? resolution.problems : []), ...("problems" in ciliumPlan ? ciliumPlan.problems : []), ...portalIssues];
  if ("problems" in resolution || "problems" in ciliumPlan || portalIssues.length > 0) {
    throw userErrorFromProblems(`stack ${inputs.stack} cannot be deployed (nothing was changed)`, problems);
  }

  const cilium = new Cilium("cilium", { plan: ciliumPlan });
  const portal = settings.portal.enabled
    ? new Portal("portal-server", {
        settings: settings.portal,
        contract,
        entries: settings.entries,
        stack: inputs.stack,
        ...(settings.nodeAddress ? { nodeAddress: settings.nodeAddress } : {}),
      })
    : undefined;
  const mirrorsPortal = (plan: ExposurePlan) =>
    plan.kind === "nodePort" && plan.namespace === settings.portal.namespace && plan.mirrors === PORTAL_SERVICE_NAME;
  if (portal && !resolution.plans.some(mirrorsPortal)) {
    pulumi.log.warn(
      `the portal is deployed but not published: no selected contract entry mirrors Service ${settings.portal.namespace}/${PORTAL_SERVICE_NAME} port http (add it to the contract and ui-exposure:entries)`,
    );
  }
  // The NodePort Service mirroring the portal waits for the portal: it must not outlive a failed portal Service.
  const observedServices = new Set(services.map((s) => `${s.metadata.namespace}/${s.metadata.name}`));
  const published = resolution.plans.map((plan) =>
    publish(plan, resolution.node, observedServices, portal && mirrorsPortal(plan) ? { dependsOn: [portal] } : undefined),
  );

  const records = pulumi.all(Object.fromEntries(published.map((p) => [p.entry, p.record])));
  return {
    urls: records.apply((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, v.url]))),
    node: resolution.node,
    endpoints: records,
    cilium: cilium.summary,
    contract: contractFile,
  };
}

function publish(
  plan: ExposurePlan,
  node: NodeChoice,
  /** "namespace/name" of every Service observed in the cluster. */
  existing: ReadonlySet<string>,
  opts?: pulumi.ComponentResourceOptions,
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
    { plan, nodeAddress: node.address, alreadyExists: existing.has(`${plan.namespace}/${plan.serviceName}`) },
    opts,
  );
  return {
    entry: plan.entry,
    record: pulumi.all([exposure.nodePort, exposure.url]).apply(([nodePort, url]) => ({
      exposure: "nodePort" as const,
      namespace: plan.namespace,
      mirrors: plan.mirrors,
      service: plan.serviceName,
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
