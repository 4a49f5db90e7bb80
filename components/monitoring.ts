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
 * The platform's Prometheus watching the exposure (src/core/monitoring.ts): a ServiceMonitor
 * for the in-cluster portal, a PrometheusRule with the alerts and a Grafana dashboard ConfigMap,
 * each labelled `release: <kube-prometheus-stack release>`. Auto-named: a fixed name could take
 * over an object this stack did not create.
 */
export class Monitoring extends pulumi.ComponentResource {
  public readonly serviceMonitor: k8s.apiextensions.CustomResource;
  public readonly prometheusRule: k8s.apiextensions.CustomResource;
  public readonly dashboard: k8s.core.v1.ConfigMap;

  constructor(name: string, args: MonitoringArgs, opts?: pulumi.ComponentResourceOptions) {
    super("ui-exposure:monitoring:Monitoring", name, args, opts);
    const provider = kubernetesProviderOf(opts, `Monitoring ${name}`);
    const objects = monitoringObjects(args.target);
    const namespaced = <T extends { metadata: Record<string, unknown> }>(o: T) => ({ ...o, metadata: { ...o.metadata, namespace: args.namespace } });

    this.serviceMonitor = new k8s.apiextensions.CustomResource(`${name}-servicemonitor`, namespaced(objects.serviceMonitor), { parent: this, provider });
    this.prometheusRule = new k8s.apiextensions.CustomResource(`${name}-rules`, namespaced(objects.prometheusRule), { parent: this, provider });
    const { apiVersion: _v, kind: _k, ...dashboard } = namespaced(objects.dashboard);
    this.dashboard = new k8s.core.v1.ConfigMap(`${name}-dashboard`, dashboard, { parent: this, provider });

    this.registerOutputs({ serviceMonitor: this.serviceMonitor, prometheusRule: this.prometheusRule, dashboard: this.dashboard });
  }
}
