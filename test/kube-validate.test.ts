import { describe, expect, it } from "vitest";
import { checkListAnswer } from "../src/core/kube/validate";

// The shapes the API server really answers with are valid; only malformed ones are problems.
describe("kube validate: EndpointSlices as the API server writes them", () => {
  const slice = (extra: Record<string, unknown>) => ({
    apiVersion: "discovery.k8s.io/v1",
    kind: "EndpointSlice",
    metadata: { name: "grafana-nodeport-abcde", namespace: "grafana", labels: { "kubernetes.io/service-name": "grafana-nodeport" } },
    addressType: "IPv4",
    ...extra,
  });

  it("a Service scaled to zero: endpoints and ports null (Go nil slices) is no problem", () => {
    const answer = checkListAnswer("EndpointSlice", { items: [slice({ endpoints: null, ports: null })] });
    expect(answer).toEqual({ items: [slice({ endpoints: null, ports: null })] });
  });

  it("ports that are not a list are still refused, naming the field", () => {
    const answer = checkListAnswer("EndpointSlice", { items: [slice({ endpoints: null, ports: "80" })] });
    expect("problems" in answer && answer.problems.length).toBe(1);
  });
});
