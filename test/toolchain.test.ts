import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { candidates, findInstalled, linkBinaries, reportedVersion, STAGES, stageStartLine } from "../src/adapters/sandbox/toolchain";

describe("the toolchain build's progress", () => {
  it("a stage's line gives its own expected time and the whole build's elapsed time, never as the stage's (found by a new user)", () => {
    const missing = STAGES.filter((s) => s.name !== "pulumi");
    expect(stageStartLine("langhost", missing, 600)).toBe("toolchain: [1/6] building langhost, expected 17 s (the build started 10 min ago)");
    expect(stageStartLine("kube-scheduler", missing, 45)).toBe("toolchain: [6/6] building kube-scheduler, expected 2 min (the build started 45 s ago)");
    expect(stageStartLine("helm", missing, 5)).toBe("toolchain: building helm, expected ? (the build started 5 s ago)");
  });
});

describe("binaries a user already has", () => {
  const pinned = { pulumi: "3.248.0", k8sprov: "4.25.0", kubernetes: "1.37.2", etcd: "3.7.3" };
  const fake = (file: string, output: string) => {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, `#!/bin/sh\necho '${output}'\n`, { mode: 0o755 });
  };
  const withDir = (body: (dir: string) => void) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "toolchain-reuse-"));
    try {
      body(dir);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  };

  it("are looked for in envtest's variables, its folder, PATH and the installed plugin, in that order", () => {
    const env = { TEST_ASSET_ETCD: "/e/etcd", KUBEBUILDER_ASSETS: "/kb", PATH: "/usr/local/bin:relative:/opt/k8s", HOME: "/home/u" };
    expect(candidates("etcd", env, pinned)).toEqual([
      { file: "/e/etcd", source: "TEST_ASSET_ETCD" },
      { file: "/kb/etcd", source: "KUBEBUILDER_ASSETS" },
      { file: "/usr/local/bin/etcd", source: "PATH" },
      { file: "/opt/k8s/etcd", source: "PATH" },
    ]);
    expect(candidates("kube-scheduler", { PATH: "/opt/k8s" }, pinned)).toEqual([{ file: "/opt/k8s/kube-scheduler", source: "PATH" }]);
    expect(candidates("kube-apiserver", { PATH: "" }, pinned)).toEqual([
      { file: "/usr/local/kubebuilder/bin/kube-apiserver", source: "envtest's default folder" },
    ]);
    expect(candidates("prov/pulumi-resource-kubernetes", env, pinned)).toEqual([
      { file: "/home/u/.pulumi/plugins/resource-kubernetes-v4.25.0/pulumi-resource-kubernetes", source: "the installed plugin" },
    ]);
    expect(candidates("prov/pulumi-resource-kubernetes", { ...env, PULUMI_HOME: "/ph" }, pinned)[0]?.file).toBe(
      "/ph/plugins/resource-kubernetes-v4.25.0/pulumi-resource-kubernetes",
    );
  });

  it("read the version each reports: Kubernetes vX.Y.Z, etcd Version: X.Y.Z", () => {
    expect(reportedVersion("kube-apiserver", "Kubernetes v1.37.2\n", pinned)).toBe("1.37.2");
    expect(reportedVersion("kube-proxy", "Kubernetes v1.37.20\n", pinned)).toBe("1.37.20");
    expect(reportedVersion("etcd", "etcd Version: 3.7.3\nGit SHA: abc\nGo Version: go1.26\n", pinned)).toBe("3.7.3");
    expect(reportedVersion("etcd", "etcd 3.7.3\n", pinned)).toBeUndefined();
  });

  it("are used only at the pinned version (one line for each one that is not), the first that is found winning; the rest is the toolchain's", () =>
    withDir((dir) => {
      fake(path.join(dir, "envtest/etcd"), "etcd Version: 3.5.21");
      fake(path.join(dir, "server/etcd"), "etcd Version: 3.7.3");
      fake(path.join(dir, "server/kube-apiserver"), "Kubernetes v1.37.2");
      fake(path.join(dir, "server/kube-scheduler"), "Kubernetes v1.36.0");
      fake(path.join(dir, "home/.pulumi/plugins/resource-kubernetes-v4.25.0/pulumi-resource-kubernetes"), "");
      const env = {
        TEST_ASSET_ETCD: path.join(dir, "envtest/etcd"),
        KUBEBUILDER_ASSETS: path.join(dir, "none"),
        PATH: path.join(dir, "server"),
        HOME: path.join(dir, "home"),
      };
      const said: string[] = [];
      const stages = STAGES.filter((s) => s.name !== "pulumi" && s.name !== "langhost");
      const found = findInstalled(stages, env, pinned, (l) => said.push(l));
      expect(found).toEqual([
        {
          binary: "prov/pulumi-resource-kubernetes",
          file: path.join(dir, "home/.pulumi/plugins/resource-kubernetes-v4.25.0/pulumi-resource-kubernetes"),
          source: "the installed plugin",
          version: "4.25.0",
        },
        { binary: "kube-apiserver", file: path.join(dir, "server/kube-apiserver"), source: "PATH", version: "1.37.2" },
        { binary: "etcd", file: path.join(dir, "server/etcd"), source: "PATH", version: "3.7.3" },
      ]);
      expect(said).toEqual([
        `toolchain: not using ${path.join(dir, "envtest/etcd")} (TEST_ASSET_ETCD): it reports version 3.5.21, the pinned one is 3.7.3`,
        `toolchain: not using ${path.join(dir, "server/kube-scheduler")} (PATH): it reports version 1.36.0, the pinned one is 1.37.2`,
      ]);
      const links = path.join(dir, "links");
      linkBinaries(links, "/toolchain/bin", stages, found);
      expect(fs.readlinkSync(path.join(links, "etcd"))).toBe(path.join(dir, "server/etcd"));
      expect(fs.readlinkSync(path.join(links, "prov/pulumi-resource-kubernetes"))).toBe(found[0]?.file);
      expect(fs.readlinkSync(path.join(links, "kube-scheduler"))).toBe("/toolchain/bin/kube-scheduler");
    }));
});
