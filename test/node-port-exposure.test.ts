import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { afterEach, describe, expect, it } from "vitest";
import { useProgramMocks } from "../components/mocks";
import { NodePortExposure } from "../components/node-port-exposure";
import type { NodePortPlan } from "../src/core/plan";

const plan: NodePortPlan = {
  kind: "nodePort",
  entry: "grafana",
  scheme: "http",
  namespace: "monitoring",
  mirrors: "kube-prometheus-stack-grafana",
  serviceName: "grafana-nodeport",
  selector: { "app.kubernetes.io/name": "grafana" },
  portName: "http",
  port: 80,
  targetPort: 3000,
  protocol: "TCP",
};

describe("NodePortExposure", () => {
  afterEach(() => pulumi.runtime.disconnect());

  it("its nodePort hold goes with its Service: a destroy deletes the Service alone, without first patching it to release the port", async () => {
    await useProgramMocks({ stack: "test" });
    // The options each child is registered with, as the engine receives them.
    const options = new Map<string, pulumi.ResourceOptions>();
    const provider = new k8s.Provider("kubernetes", { context: "test" });
    const exposure = new NodePortExposure(
      "grafana",
      { plan, nodeAddress: "127.0.0.12", stack: "test" },
      { providers: [provider], transformations: [(a) => void options.set(a.name, a.opts)] },
    );
    expect(options.get("grafana-port")?.deletedWith).toBe(exposure.service);
    expect(options.get("grafana-svc")?.deletedWith).toBeUndefined();
  });
});
