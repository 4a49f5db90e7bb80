"use strict";
// The bench's floor: one Service per object of services.json (what our program declares for the same contract, written by bench/live.ts), through one
// explicit provider with the stack's kube target. No cluster reads, no components, no hooks, no outputs.
const fs = require("node:fs");
const path = require("node:path");
const k8s = require("@pulumi/kubernetes");
const pulumi = require("@pulumi/pulumi");

const kube = new pulumi.Config("kubernetes");
const provider = new k8s.Provider("kubernetes", { context: kube.require("context"), kubeconfig: kube.require("kubeconfig") });
for (const s of JSON.parse(fs.readFileSync(path.join(__dirname, "services.json"), "utf8"))) {
  new k8s.core.v1.Service(`${s.metadata.namespace}-${s.metadata.name}`, { metadata: s.metadata, spec: s.spec }, { provider });
}
