// The policy pack's judge (policy-pack/judge.ts) given what an outside tester found: shapes a
// program can hand it that it must judge or refuse in one message, and advice it must not give
// falsely. Each case failed when written (r10-tester).
import { describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { type Judge, packJudge, undeclaredExposure } from "../policy-pack/judge";

const CONTRACT = {
  version: 1,
  endpoints: [{ name: "argocd", exposed: true, scheme: "http", service: { namespace: "argocd", name: "argocd-server", port: "http" } }],
};

function judge(config: Record<string, unknown>): Judge {
  const j = packJudge(config, new Map(), () => stringify(CONTRACT));
  if ("problem" in j) throw new Error(j.problem);
  return j;
}

describe("workloads the engine hands the pack", () => {
  it("a ReplicationController's pod template on the host network with a hostPort is judged, as a Deployment's is", () => {
    // The real engine passed this with the pack mandatory (policy-pack ✅); its pods then open 7001 on every node.
    const rc = {
      metadata: { name: "rc", namespace: "tools" },
      spec: {
        selector: { app: "a" },
        template: {
          metadata: { labels: { app: "a" } },
          spec: { hostNetwork: true, containers: [{ name: "c", image: "x", ports: [{ containerPort: 7001, hostPort: 7001 }] }] },
        },
      },
    };
    const found = undeclaredExposure(judge({ contract: "/c.yaml" }), "kubernetes:core/v1:ReplicationController", rc);
    expect(found.join("\n")).toContain("ReplicationController tools/rc");
    expect(found.join("\n")).toContain("ui-exposure:allowlist.hostPorts 'tools/rc-*:7001'");
  });
});

describe("hostile Service shapes: one message or a verdict, never a TypeError", () => {
  // A JavaScript program is not type-checked: the engine hands these to the pack before the API server sees them,
  // and the real engine printed the TypeError's stack trace as the preview's error.
  for (const [label, ports] of [
    ["ports a string", "abc"],
    ["ports a map", { a: 1 }],
    ["a null port", [null, { port: 80 }]],
  ] as const)
    it(label, () => {
      const svc = { metadata: { name: "s", namespace: "tools" }, spec: { type: "NodePort", selector: { app: "a" }, ports } };
      let found: string[] = [];
      expect(() => {
        found = undeclaredExposure(judge({ contract: "/c.yaml" }), "kubernetes:core/v1:Service", svc);
      }).not.toThrow();
      expect(found.join("\n")).toContain("Service tools/s");
    });
});

describe("the allowlist line a violation offers admits it", () => {
  it("our entry's Service with a port added: adding the offered line admits it, or no line is offered", () => {
    const svc = {
      metadata: { name: "argocd-nodeport", namespace: "argocd" },
      spec: {
        type: "NodePort",
        selector: { app: "a" },
        ports: [
          { name: "http", port: 80 },
          { name: "extra", port: 81 },
        ],
      },
    };
    const before = undeclaredExposure(judge({ contract: "/c.yaml" }), "kubernetes:core/v1:Service", svc);
    const offered = /the allowlist line that admits it: ui-exposure:allowlist\.services '([^']+)'/.exec(before.join("\n"))?.[1];
    if (offered === undefined) return;
    const after = undeclaredExposure(judge({ contract: "/c.yaml", allowlist: { services: [offered] } }), "kubernetes:core/v1:Service", svc);
    expect(after, `the pack offered ui-exposure:allowlist.services '${offered}', which does not admit it`).toEqual([]);
  });
});

describe("bounded messages", () => {
  it("a Service with 100,000 ports gives a message of bounded size", () => {
    const ports = Array.from({ length: 100_000 }, (_, i) => ({ name: `p${i}`, port: (i % 65535) + 1 }));
    const found = undeclaredExposure(judge({ contract: "/c.yaml" }), "kubernetes:core/v1:Service", {
      metadata: { name: "s", namespace: "tools" },
      spec: { type: "NodePort", ports },
    });
    expect(found.length).toBe(1);
    expect(found[0]?.length).toBeLessThan(10_000);
  });
});

describe("no contract given", () => {
  it("entries named with no contract anywhere: the problem says no contract was given and where to give it", () => {
    // bench's own stack settings (entries named, no ui-exposure:contract: the program defaults to contract/endpoints.yaml,
    // the pack to none) under `pulumi preview --policy-pack policy-pack`: the problem read "... which the contract does not
    // declare (declared: )", three times, and never said that no contract was found.
    const j = packJudge({}, new Map([["ui-exposure:entries", JSON.stringify(["argocd", "gitea", "grafana"])]]), () => {
      throw new Error("no file is named");
    });
    expect("problem" in j).toBe(true);
    const problem = "problem" in j ? j.problem : "";
    expect(problem).not.toContain("(declared: )");
    expect(problem).toMatch(/no contract/i);
  });
});
