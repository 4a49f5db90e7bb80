// The floor of part 1: the Pulumi SDK alone registering the same resources as the program
// (one component + one Service per exposed entry, same inputs), with none of the program's
// reading, planning or output plumbing. The program's cost above this line is ours; the
// cost below it is the SDK's, whatever the program does.
import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import type { NodePortPlan } from "../src/core/plan";

/** A component that only registers (no outputs, no apply chains). */
class Floor extends pulumi.ComponentResource {
  constructor(name: string) {
    super("bench:floor:Exposure", name, {}, {});
    this.registerOutputs({});
  }
}

export function registerFloor(plans: readonly NodePortPlan[]): pulumi.Output<unknown[]> {
  const ports = plans.map((plan) => {
    const parent = new Floor(plan.entry);
    const svc = new k8s.core.v1.Service(
      `${plan.entry}-svc`,
      {
        metadata: { name: plan.serviceName, namespace: plan.namespace },
        spec: {
          type: "NodePort",
          selector: plan.selector,
          ports: [{ name: plan.portName, port: plan.port, targetPort: plan.targetPort, protocol: plan.protocol }],
        },
      },
      { parent },
    );
    return svc.spec.ports;
  });
  return pulumi.all(ports);
}
