import { describe, expect, it } from "vitest";
import {
  droppedSelectorProblem,
  entryService,
  foreignSelectorProblem,
  labelClaimProblem,
  labelledStack,
  notPublishedService,
  ourServicesByName,
  ownershipProblem,
  publishedByAnotherStack,
  selectorKeysBeyond,
  takeoverRefusal,
  uidsUnknownTo,
  upRefusals,
} from "../src/core/ownership";
import type { NodePortPlan } from "../src/core/plan";

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

describe("ours by name and by label, decided here (issue 42 #4)", () => {
  const ours = ourServicesByName([
    { name: "argocd", exposed: true, scheme: "http", service: { namespace: "argocd", name: "argocd-server", port: 80 } },
    { name: "agent", exposed: true, scheme: "http", hostPort: { namespace: "tools", port: 7000 } },
  ] as never);

  it("names our Service of each NodePort entry `<namespace>/<entry>-nodeport`, and none of a hostPort entry", () => {
    expect([...ours]).toEqual([["argocd/argocd-nodeport", { entry: "argocd" }]]);
  });

  it("reads a label claim as a claim: an impersonation of an entry we publish, an entry we do not, or none", () => {
    const lookAlike = { metadata: { name: "copy", namespace: "tools", labels: OURS } };
    expect(labelClaimProblem(lookAlike, ours)).toBe(
      "impersonates contract entry 'argocd' (carries its labels, but that entry's Service is argocd/argocd-nodeport created by this stack): undeclared exposure; remove it",
    );
    expect(labelClaimProblem(lookAlike, new Map())).toMatch(/^labelled as made by ui-exposure for entry 'argocd', which this stack does not publish/);
    expect(labelClaimProblem({ metadata: { name: "x", labels: { "ui-exposure.io/entry": "argocd" } } }, ours)).toBeUndefined();
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

const live = (namespace: string, name: string, uid: string, selector: Record<string, string> = {}) => ({
  metadata: { name, namespace, uid },
  spec: { selector },
});

describe("ownershipProblem: only what the last up published is ours", () => {
  it("accepts the Service the last up published (same uid, or outputs without uids)", () => {
    expect(ownershipProblem(live("a", "x-nodeport", "u1"), { service: "x-nodeport", uid: "u1" })).toBeUndefined();
    expect(ownershipProblem(live("a", "x-nodeport", "u1"), { nodePort: 31000, url: "http://h:31000" })).toBeUndefined();
  });
  it("refuses one the last up did not publish, or one with another uid, with the command that removes it", () => {
    expect(ownershipProblem(live("a", "x-nodeport", "u1"), undefined)).toBe(
      "a/x-nodeport exists but the last up published no Service for this entry: made outside this stack, it is never taken over: kubectl -n a delete service x-nodeport, then pulumi up creates this stack's own (after an interrupted up that created it: pulumi up alone)",
    );
    expect(ownershipProblem(live("a", "x-nodeport", "u2"), { service: "x-nodeport", uid: "u1" })).toBe(
      "a/x-nodeport is not the Service the last up published (its uid u2; the last up published u1); ui-exposure never takes over a Service it did not create: remove it (kubectl -n a delete service x-nodeport), then pulumi up recreates this stack's own",
    );
  });
});

describe("notPublishedService: what `up` refuses (issue 33 #1)", () => {
  it("is decided by the published uid alone: a state a refresh rewrote proves nothing", () => {
    expect(notPublishedService(live("a", "x-nodeport", "u1"), { uid: "u1" })).toBeUndefined();
    // Nothing published for the entry: the takeover hook refuses a Service the state does not hold.
    expect(notPublishedService(live("a", "x-nodeport", "u1"), undefined)).toBeUndefined();
    expect(notPublishedService(live("a", "x-nodeport", "copy"), { uid: "u1" })).toContain("kubectl -n a delete service x-nodeport");
  });
});

describe("uidsUnknownTo (issue 34 #10)", () => {
  it("compares namespace and name: a look-alike in another namespace is not the published Service", () => {
    const published = { argocd: { namespace: "argocd", service: "argocd-nodeport", uid: "u1" } };
    expect(uidsUnknownTo(published, [live("argocd", "argocd-nodeport", "u1"), live("tenant", "argocd-nodeport", "x")])).toEqual([]);
    expect(uidsUnknownTo(published, [live("argocd", "argocd-nodeport", "u2")])).toEqual(["u2"]);
  });
});

describe("foreign selector keys (issue 34 #11)", () => {
  it("names a key our Service's selector has that the entry does not set, and the exact command that removes it", () => {
    const svc = live("argocd", "argocd-nodeport", "u1", { "app.kubernetes.io/name": "argocd-server", tier: "frontend", "x.io/a~b": "1" });
    const keys = selectorKeysBeyond({ "app.kubernetes.io/name": "argocd-server" }, svc, undefined).foreign;
    expect(keys).toEqual(["tier", "x.io/a~b"]);
    expect(foreignSelectorProblem(svc, keys)).toBe(
      `selector key tier=frontend, x.io/a~b=1 of argocd/argocd-nodeport was added outside this stack (traffic may go to other pods); remove it: kubectl -n argocd patch service argocd-nodeport --type=json -p '[{"op":"remove","path":"/spec/selector/tier"},{"op":"remove","path":"/spec/selector/x.io~1a~0b"}]'`,
    );
    expect(
      selectorKeysBeyond(
        { "app.kubernetes.io/name": "argocd-server" },
        live("argocd", "argocd-nodeport", "u1", { "app.kubernetes.io/name": "other" }),
        undefined,
      ),
    ).toEqual({ dropped: [], foreign: [] });
  });
});

describe("selector keys the chart dropped (issue 39 #3): ours to drop, proven by what the last up published", () => {
  const wanted = { "app.kubernetes.io/name": "argocd-server" };
  const applied = { app: "argocd-server", "app.kubernetes.io/name": "argocd-server" };
  const upgraded = (extra: Record<string, string>) => live("argocd", "argocd-nodeport", "u1", { "app.kubernetes.io/name": "argocd-server", ...extra });

  it("a key the last up published with this value, that the vendored selector no longer has, is dropped; any other extra key is foreign", () => {
    expect(selectorKeysBeyond(wanted, upgraded({ app: "argocd-server" }), applied)).toEqual({ dropped: ["app"], foreign: [] });
    expect(selectorKeysBeyond(wanted, upgraded({ app: "argocd-server", tier: "frontend" }), applied)).toEqual({ dropped: ["app"], foreign: ["tier"] });
    // The same key with another value: someone changed it since the last up, it is not what this stack applied.
    expect(selectorKeysBeyond(wanted, upgraded({ app: "other" }), applied)).toEqual({ dropped: [], foreign: ["app"] });
    // No published selector (a record of an earlier version, or no outputs read): nothing proves a key ours.
    expect(selectorKeysBeyond(wanted, upgraded({ app: "argocd-server" }), undefined)).toEqual({ dropped: [], foreign: ["app"] });
    // A key the record holds as inherited (an object's prototype) is not one it published.
    expect(selectorKeysBeyond(wanted, upgraded({ toString: "x" }), {})).toEqual({ dropped: [], foreign: ["toString"] });
  });

  it("says which key the chart dropped, from which Service, and that pulumi up drops it", () => {
    expect(droppedSelectorProblem(upgraded({ app: "argocd-server", "x.io/b": "1" }), ["app", "x.io/b"], "argocd/argocd-server")).toBe(
      "selector key app=argocd-server, x.io/b=1 of argocd/argocd-nodeport was mirrored by the last up from argocd/argocd-server, whose selector no longer has it (a chart upgrade): our Service may select no pod until pulumi up drops it",
    );
  });

  const plan: NodePortPlan = {
    kind: "nodePort",
    entry: "argocd",
    namespace: "argocd",
    serviceName: "argocd-nodeport",
    mirrors: "argocd-server",
    selector: wanted,
    port: 80,
    targetPort: 8080,
    portName: "http",
    protocol: "TCP",
    scheme: "http",
  } as NodePortPlan;
  const noState = { services: new Map<string, string>(), configMaps: new Map<string, string>(), guard: new Set<string>() };
  const refusals = (extra: Record<string, string>, published: Record<string, unknown>) =>
    upRefusals([plan], new Map([["argocd/argocd-nodeport", upgraded(extra)]]), { argocd: { uid: "u1", ...published } }, undefined, noState);

  it("up refuses no key the chart dropped, and still refuses a foreign one with the command that removes only it", () => {
    expect(refusals({ app: "argocd-server" }, { selector: applied })).toEqual([]);
    expect(refusals({ app: "argocd-server", tier: "frontend" }, { selector: applied })).toEqual([
      `entry 'argocd': selector key tier=frontend of argocd/argocd-nodeport was added outside this stack (traffic may go to other pods); remove it: kubectl -n argocd patch service argocd-nodeport --type=json -p '[{"op":"remove","path":"/spec/selector/tier"}]', then pulumi up`,
    ]);
    expect(refusals({ app: "argocd-server" }, {})).toEqual([
      `entry 'argocd': selector key app=argocd-server of argocd/argocd-nodeport was added outside this stack (traffic may go to other pods); remove it: kubectl -n argocd patch service argocd-nodeport --type=json -p '[{"op":"remove","path":"/spec/selector/app"}]', then pulumi up`,
    ]);
  });
});
