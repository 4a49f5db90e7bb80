import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { gunzipBounded } from "../src/adapters/gunzip";
import { bundlePortalServer, type PortalBundle } from "../src/adapters/portal-bundle";
import { type OpenStack, openStack } from "../src/adapters/stack-inputs";
import type { CiliumReleasePlan } from "../src/core/cilium/plan";
import { UserError, userErrorFromProblems } from "../src/core/errors";
import type { ClusterReader } from "../src/core/kube/cluster";
import type { Service } from "../src/core/kube/types";
import { buildUrl } from "../src/core/plan";
import { stackKubeTarget } from "../src/core/settings";
import { type ExposureDecision, type PortalDecision, planStack, readStack, type StackRecord } from "../src/core/stack-plan";
import { guardAdmission } from "./admission-guard";
import { Cilium } from "./cilium";
import { Monitoring } from "./monitoring";
import { NodePortExposure } from "./node-port-exposure";
import { Portal, portalPublished } from "./portal";

export interface ProgramInputs extends StackRecord {
  /** Folder holding Pulumi.yaml; relative contract paths resolve against it. */
  projectDir: string;
  stack: string;
  /** Flat Pulumi config (`pulumi.runtime.allConfig()`); default: read from the stack file (`exposure render`). */
  config?: Readonly<Record<string, string>>;
  /** Replaces the stack's contract path (`exposure render --contract`). */
  contract?: string;
  /** Where to read the cluster: a reader (a snapshot), or how to connect to the stack's kube target once the settings name it (the engine's, engine.ts). */
  cluster: ClusterReader | ((target: ReturnType<typeof stackKubeTarget>) => Promise<ClusterReader>);
  /** The cluster read is the one the engine applies to (engine.ts): up waits there for what it applied (Cilium's roll-out, the guard's type check). */
  live?: boolean;
}

/** One record per published entry, as stack output, read back as one of PublishedEndpoints (src/core/published.ts). */
interface EndpointRecord {
  exposure: "nodePort" | "hostPort";
  namespace: string;
  /** nodePort entries: the vendored Service mirrored; ours; its uid and the selector applied (proof of what this stack created and mirrored). */
  mirrors?: string;
  service?: string;
  uid?: string;
  selector?: Record<string, string>;
  nodePort?: number;
  /** hostPort entries: the port, the pod and the node holding it. */
  hostPort?: number;
  pod?: string;
  node?: string;
  url: string;
}

/** The whole stack: read, decide (src/core/stack-plan.ts), declare; every check passes before the first resource is declared. */
export async function declareStack(inputs: ProgramInputs) {
  const opened = openStack(inputs);
  const { stack } = opened;
  const target = stackKubeTarget(stack, opened.config);
  const cluster = typeof inputs.cluster === "function" ? await inputs.cluster(target) : inputs.cluster;
  const plan = planStack(opened, await readStack(cluster, opened, inputs, gunzipBounded));
  if ("problems" in plan) throw userErrorFromProblems(`stack ${stack} cannot be deployed (nothing was changed)`, plan.problems);
  // The last thing that can fail, built before the first resource is declared: a failed bundle must not leave `up` half-applied.
  const portalBundle = plan.portal ? bundlePortalServer() : undefined;

  // Every Kubernetes resource goes through the stack's own cluster, never the default provider (whatever context is current).
  const kubernetes = new k8s.Provider("kubernetes", target);
  const withProvider = (opts?: pulumi.ComponentResourceOptions): pulumi.ComponentResourceOptions => ({ ...opts, providers: [kubernetes] });
  const release = plan.cilium.mode === "l4" && inputs.live ? plan.cilium.release : undefined;
  const readWorkloads = release ? { readWorkloads: () => ciliumWorkloads(cluster, release) } : {};
  // Under the engine the values diff against the live release is logged (render prints the values instead).
  const cilium = new Cilium("cilium", { plan: plan.cilium, logChanges: !!inputs.live, ...readWorkloads }, withProvider());
  const portal = portalBundle && plan.portal ? declarePortal(opened, target.context, plan.portal, portalBundle, withProvider) : undefined;
  const plans = plan.exposures.map((e) => e.plan);
  const guard = guardAdmission({ ...opened, live: !!inputs.live }, cluster, plans, plan.live, withProvider());
  // A failed type check of the guard's policy fails the update here: by the program's own rejection (the SDK does not fail it on pulumi.log.error,
  // pulumi/pulumi#6090), so the engine shows the message alone, like every other refusal (asRunError).
  const refusal = guard ? await guard.refusal : undefined;
  if (refusal) throw new UserError(refusal);

  // Our NodePort Services are created only once the guard that must admit them is in effect.
  const after = (e: ExposureDecision) => [...(portal && e.mirrorsPortal ? [portal] : []), ...(guard ? [guard.effective] : [])];
  const published = plan.exposures.map((e): [string, pulumi.Output<EndpointRecord>] => [
    e.plan.entry,
    declareExposure(e, plan.node.address, stack, plan.live, withProvider({ dependsOn: after(e) })),
  ]);
  const records = pulumi.all(Object.fromEntries(published));
  // The in-cluster portal judges against what this `up` published, as `exposure status` does.
  if (portal) portalPublished("portal-server-published", { portal, endpoints: records, refusal: plan.portal?.publishedRefusal }, { provider: kubernetes });
  return {
    urls: records.apply((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, v.url]))),
    node: plan.node,
    endpoints: records,
    cilium: cilium.summary,
    contract: opened.contractFile,
  };
}

/** The in-cluster portal, and its monitoring when on (Prometheus scrapes its /metrics; settings refuse monitoring without the portal). */
function declarePortal(
  { settings, stack, contract }: OpenStack,
  cluster: string,
  { unpublished, publishedRefusal: _, ...refusals }: PortalDecision,
  bundle: PortalBundle,
  withProvider: (opts?: pulumi.ComponentResourceOptions) => pulumi.ComponentResourceOptions,
): Portal {
  const audit = settings.monitoring.enabled ? { audit: settings.allowlist } : {};
  const { entries, nodeAddress } = settings;
  const args = { bundle, settings: settings.portal, contract, entries, stack, cluster, nodeAddress, ...refusals, ...audit };
  const portal = new Portal("portal-server", args, withProvider());
  if (settings.monitoring.enabled) {
    const target = { namespace: settings.portal.namespace, release: settings.monitoring.release, stack };
    new Monitoring("monitoring", { target, namespace: portal.namespace }, withProvider({ dependsOn: [portal] }));
  }
  if (unpublished) pulumi.log.warn(unpublished);
  return portal;
}

/** One selected entry's record: a hostPort entry's is read (nothing declared), a nodePort entry's once its Service is applied. */
function declareExposure(
  { plan, keepNodePort, note }: ExposureDecision,
  nodeAddress: string,
  stack: string,
  live: ReadonlyMap<string, Service>,
  opts: pulumi.ComponentResourceOptions,
): pulumi.Output<EndpointRecord> {
  if (plan.kind === "hostPort") {
    const url = buildUrl(plan.scheme, plan.address, plan.hostPort);
    return pulumi.output({ exposure: "hostPort" as const, namespace: plan.namespace, hostPort: plan.hostPort, pod: plan.pod, node: plan.node, url });
  }
  if (note) pulumi.log.warn(note);
  const existing = live.get(`${plan.namespace}/${plan.serviceName}`);
  const exposure = new NodePortExposure(plan.entry, { plan, nodeAddress, stack, existing, ...(keepNodePort !== undefined ? { keepNodePort } : {}) }, opts);
  return pulumi.all([exposure.nodePort, exposure.url, exposure.service.metadata.uid]).apply(([nodePort, url, uid]) => ({
    exposure: "nodePort" as const,
    namespace: plan.namespace,
    mirrors: plan.mirrors,
    service: plan.serviceName,
    ...(uid ? { uid } : {}),
    // Written with the uid, once the Service is applied: the keys this up owns in its selector (ownership.ts).
    selector: { ...plan.selector },
    ...(nodePort !== undefined ? { nodePort } : {}),
    url,
  }));
}

/** What up waits on once it has applied the Cilium release: its agents, its operator and their pods. */
async function ciliumWorkloads(cluster: ClusterReader, { namespace }: CiliumReleasePlan) {
  const named = async (plural: string, kind: string, name: string) =>
    (await cluster.listCustom({ group: "apps", versions: ["v1"], plural, kind })).find((o) => o.metadata.namespace === namespace && o.metadata.name === name);
  const [agents, operator] = [await named("daemonsets", "DaemonSet", "cilium"), await named("deployments", "Deployment", "cilium-operator")];
  return { agents, operator, pods: await cluster.listPods({ namespace }) };
}

/**
 * Turns user errors into engine errors shown without a stack trace; the stack is replaced too, as the SDK formats it for its trace span (source maps of
 * every frame: about a minute of blocked event loop).
 */
export function asRunError(err: unknown): never {
  if (err instanceof UserError) {
    const runError = new pulumi.RunError(err.message);
    runError.stack = `RunError: ${err.message}`;
    throw runError;
  }
  throw err;
}
