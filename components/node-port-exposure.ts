import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { ENTRY_LABEL, MANAGED_BY_LABEL, MANAGED_BY_VALUE, MIRRORS_ANNOTATION } from "../src/core/kube/types";
import { buildUrl, type NodePortPlan } from "../src/core/plan";

export interface NodePortExposureArgs {
  plan: NodePortPlan;
  /** Address put in the URL (the chosen node's InternalIP, or the stack's pinned one). */
  nodeAddress: string;
  /**
   * Whether our Service already existed when the cluster was read. In a preview, a Service
   * still to be created only has the nodePort of a server dry run, which the real create
   * will not reuse: its URL is then shown as pending instead.
   */
  alreadyExists?: boolean;
}

/**
 * One exposed UI: a separate NodePort Service selecting the same pods as the vendored
 * ClusterIP Service (selector and target port copied from it, never retyped). The vendored
 * Service is only read. The nodePort is left to Kubernetes and read back from the API.
 */
export class NodePortExposure extends pulumi.ComponentResource {
  public readonly service: k8s.core.v1.Service;
  /** The allocated nodePort, as returned by the API server after create/update. */
  public readonly nodePort: pulumi.Output<number | undefined>;
  public readonly url: pulumi.Output<string>;

  constructor(name: string, args: NodePortExposureArgs, opts?: pulumi.ComponentResourceOptions) {
    // Recorded inputs: what defines the Service, not what was observed about it.
    super("ui-exposure:exposure:NodePortExposure", name, { plan: args.plan, nodeAddress: args.nodeAddress }, opts);
    const { plan } = args;

    this.service = new k8s.core.v1.Service(
      `${name}-svc`,
      {
        metadata: {
          // A fixed, readable name: runbooks and `kubectl -n argocd get svc argocd-nodeport` rely on it.
          name: plan.serviceName,
          namespace: plan.namespace,
          labels: {
            [MANAGED_BY_LABEL]: MANAGED_BY_VALUE,
            [ENTRY_LABEL]: plan.entry,
          },
          annotations: {
            [MIRRORS_ANNOTATION]: `${plan.namespace}/${plan.mirrors}`,
            // `up` must not wait 10 minutes for ready endpoints when a UI's pods are down:
            // readiness is reported live by `exposure status`, not enforced at deploy time.
            "pulumi.com/skipAwait": "true",
            // This Service belongs to ui-exposure alone: after a hand edit, `up` takes the
            // edited fields back instead of failing on a server-side apply conflict.
            "pulumi.com/patchForce": "true",
          },
        },
        spec: {
          type: "NodePort",
          selector: plan.selector,
          externalTrafficPolicy: "Cluster",
          ports: [{ name: plan.portName, port: plan.port, targetPort: plan.targetPort, protocol: plan.protocol }],
        },
      },
      // The name is fixed, so a replacement must delete the old Service first.
      { parent: this, deleteBeforeReplace: true },
    );

    const provisional = pulumi.runtime.isDryRun() && !args.alreadyExists;
    this.nodePort = this.service.spec.ports.apply((ports) => (provisional ? undefined : ports?.find((p) => p.name === plan.portName)?.nodePort || undefined));
    this.url = this.nodePort.apply((port) => buildUrl(plan.scheme, args.nodeAddress, port));

    this.registerOutputs({ service: this.service, nodePort: this.nodePort, url: this.url });
  }
}
