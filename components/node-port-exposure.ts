import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { ourServiceSpec } from "../src/core/exposure-model";
import { ENTRY_LABEL, MANAGED_BY_LABEL, MANAGED_BY_VALUE, MIRRORS_ANNOTATION, type Service, STACK_LABEL } from "../src/core/kube/types";
import { existingServiceRefusal } from "../src/core/ownership";
import { buildUrl, type NodePortPlan } from "../src/core/plan";
import { fixedNameService, kubernetesProviderOf } from "./kubernetes-provider";

export interface NodePortExposureArgs {
  plan: NodePortPlan;
  /** Address put in the URL (the chosen node's InternalIP, or the stack's pinned one). */
  nodeAddress: string;
  /** The stack, named in the adoption command of a refused takeover. */
  stack: string;
  /** `<entry>-nodeport` as read, if it existed: creating it is then refused (takeover), and a preview's port is real. */
  existing?: Service;
  /** The nodePort published by the last `up` and still free: asked for again (stable ports). */
  keepNodePort?: number;
}

/**
 * One exposed UI: a NodePort Service selecting the vendored one's pods. The Service never names its nodePort (same inputs before and after the first
 * allocation); `<entry>-port`, a server-side apply patch owning only `nodePort`, holds the allocated port, later the published one: the preview after
 * any `up` is clean, while a port moved by hand shows and the next `up` puts it back.
 */
export class NodePortExposure extends pulumi.ComponentResource {
  public readonly service: k8s.core.v1.Service;
  /** The nodePort, as returned by the API server after create/update. */
  public readonly nodePort: pulumi.Output<number | undefined>;
  public readonly url: pulumi.Output<string>;

  constructor(name: string, args: NodePortExposureArgs, opts?: pulumi.ComponentResourceOptions) {
    // Recorded inputs: what defines the exposure (a changed node address shows), never what was observed (the port).
    super("ui-exposure:exposure:NodePortExposure", name, { plan: args.plan, nodeAddress: args.nodeAddress }, opts);
    const { plan } = args;
    const provider = kubernetesProviderOf(opts, `NodePortExposure ${name}`);

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
            [STACK_LABEL]: args.stack,
          },
          annotations: {
            [MIRRORS_ANNOTATION]: `${plan.namespace}/${plan.mirrors}`,
            // `up` must not wait 10 minutes when a UI's pods are down: readiness is `exposure status`'s to report.
            "pulumi.com/skipAwait": "true",
            // Ours alone: after a hand edit, `up` takes the fields back instead of failing on a server-side apply conflict.
            "pulumi.com/patchForce": "true",
          },
        },
        spec: ourServiceSpec(plan),
      },
      {
        parent: this,
        provider,
        ...fixedNameService(name, args.existing && existingServiceRefusal(plan, args.stack, args.existing)),
      },
    );

    // In a preview, a Service still to be created has only a dry run's port (a dry-run patch of it would fail): the port is unknown.
    const provisional = pulumi.runtime.isDryRun() && !args.existing;
    const allocated = this.service.spec.ports.apply((ports) => ports?.find((p) => p.name === plan.portName)?.nodePort || undefined);
    const wanted: pulumi.Input<number | undefined> = provisional ? (pulumi.unknown as unknown as number) : (args.keepNodePort ?? allocated);
    // Holds the nodePort (field owner of `spec.ports[].nodePort`). Deleted with its Service: releasing the port of a Service about to go is a patch for nothing.
    const portHold = new k8s.core.v1.ServicePatch(
      `${name}-port`,
      {
        metadata: {
          name: this.service.metadata.name,
          namespace: plan.namespace,
          // Takes the port back from whoever moved it by hand. No await: on a patch it waits ~10 s for endpoints it never checks.
          annotations: { "pulumi.com/patchForce": "true", "pulumi.com/skipAwait": "true" },
        },
        spec: { ports: [{ port: plan.port, protocol: plan.protocol, nodePort: wanted as pulumi.Input<number> }] },
      },
      { parent: this, provider, dependsOn: [this.service], deletedWith: this.service },
    );

    this.nodePort = provisional
      ? pulumi.output(args.keepNodePort)
      : portHold.spec.apply((spec) => spec?.ports?.find((p) => p.port === plan.port)?.nodePort || undefined);
    this.url = this.nodePort.apply((port) => buildUrl(plan.scheme, args.nodeAddress, port));

    this.registerOutputs({ service: this.service, portHold, nodePort: this.nodePort, url: this.url });
  }
}
