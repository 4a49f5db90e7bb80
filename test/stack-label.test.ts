import { describe, expect, it } from "vitest";
import { entryService, takeoverRefusal } from "../src/core/plan";
import { labelledStack, publishedByAnotherStack } from "../src/core/stack-label";

const service = (labels: Record<string, string>) => ({ metadata: { name: "argocd-nodeport", namespace: "argocd", labels } });
const OURS = { "app.kubernetes.io/managed-by": "ui-exposure", "ui-exposure.io/entry": "argocd" };

describe("labelledStack", () => {
  it("reads the stack label of a Service of ours, only when it is a stack name", () => {
    expect(labelledStack(service({ ...OURS, "ui-exposure.io/stack": "bench" }))).toBe("bench");
    expect(labelledStack(service({ ...OURS, "ui-exposure.io/stack": "../x" }))).toBeUndefined();
    expect(labelledStack(service({ "ui-exposure.io/stack": "bench" }))).toBeUndefined();
    expect(labelledStack(service(OURS))).toBeUndefined();
  });
});

describe("publishedByAnotherStack (issue 27 #4)", () => {
  it("names the other stack and what to do, never a kubectl delete", () => {
    const plan = { entry: "argocd", namespace: "argocd", serviceName: "argocd-nodeport" };
    const text = publishedByAnotherStack(plan, "new", "bench");
    expect(text).toBe(
      "entry 'argocd': Service argocd/argocd-nodeport is labelled as published by ui-exposure stack 'bench', and stack 'new' did not create it; one stack publishes an entry in a cluster. Drop 'argocd' from ui-exposure:entries of stack 'new', or first drop it from stack 'bench' (its ui-exposure:entries, then pulumi up --stack bench); never delete another stack's Service by hand",
    );
    expect(text).not.toContain("kubectl");
    expect(takeoverRefusal(entryService(plan), "new")).toContain("kubectl -n argocd delete service argocd-nodeport");
  });
});
