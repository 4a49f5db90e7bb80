import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { type MonitoringTarget, monitoringObjects } from "../src/core/monitoring";
import { kubernetesProviderOf } from "./kubernetes-provider";

export interface MonitoringArgs {
  target: MonitoringTarget;
  /** The portal's namespace as an output: the objects wait for it when this `up` creates it. */
  namespace: pulumi.Input<string>;
}

/**
 * The platform's Prometheus watching the exposure (src/core/monitoring.ts), each object labelled `release: <release>`.
 * Auto-named: a fixed name could take over an object this stack did not create.
 */
export class Monitoring extends pulumi.ComponentResource {
  constructor(name: string, args: MonitoringArgs, opts?: pulumi.ComponentResourceOptions) {
    super("ui-exposure:monitoring:Monitoring", name, args, opts);
    const provider = kubernetesProviderOf(opts, `Monitoring ${name}`);
    const objects = monitoringObjects(args.target);
    const namespaced = <T extends { metadata: Record<string, unknown> }>(o: T) => ({ ...o, metadata: { ...o.metadata, namespace: args.namespace } });

    const serviceMonitor = new k8s.apiextensions.CustomResource(`${name}-servicemonitor`, namespaced(objects.serviceMonitor), { parent: this, provider });
    const prometheusRule = new k8s.apiextensions.CustomResource(`${name}-rules`, namespaced(objects.prometheusRule), { parent: this, provider });
    const { apiVersion: _v, kind: _k, ...dashboardArgs } = namespaced(objects.dashboard);
    const dashboard = new k8s.core.v1.ConfigMap(`${name}-dashboard`, dashboardArgs, { parent: this, provider });

    this.registerOutputs({ serviceMonitor, prometheusRule, dashboard });
  }
}
