import { describe, expect, it } from "vitest";
import { importCommand as adoptRelease } from "../src/core/cilium/adopt";
import { importCommand, RELEASE_TYPE, SERVICE_TYPE, servicePortName } from "../src/core/naming";
import { adoptServiceCommand } from "../src/core/plan";

describe("naming", () => {
  it("builds the one adoption command, with --stack when a stack is named", () => {
    expect(importCommand(SERVICE_TYPE, "argocd-svc", "argocd/argocd-nodeport", "bench")).toBe(
      "pulumi import kubernetes:core/v1:Service argocd-svc argocd/argocd-nodeport --stack bench --generate-code=false --protect=false --yes",
    );
    expect(adoptRelease("cilium", { namespace: "kube-system", releaseName: "cilium" })).toBe(
      importCommand(RELEASE_TYPE, "cilium-release", "kube-system/cilium"),
    );
  });

  it("the planner's adoption command is the same text", () => {
    const plan = { entry: "argocd", namespace: "argocd", serviceName: "argocd-nodeport" };
    expect(adoptServiceCommand(plan, "bench")).toBe(importCommand(SERVICE_TYPE, "argocd-svc", "argocd/argocd-nodeport", "bench"));
  });

  it("names a Service's port after its URL's scheme", () => {
    expect(servicePortName("https")).toBe("https");
    expect(servicePortName("http")).toBe("http");
    expect(servicePortName(undefined)).toBe("http");
  });
});
