"use strict";
// The bench's floor: what a user would write instead of our program. One Service per object of
// services.json (written by bench/live.ts from what our program declares for the same contract:
// same metadata, same spec) through one explicit provider with the stack's kube target. No
// cluster reads, no components, no hooks, no outputs.
const fs = require("node:fs");
const path = require("node:path");
const k8s = require("@pulumi/kubernetes");
const pulumi = require("@pulumi/pulumi");

const kube = new pulumi.Config("kubernetes");
const provider = new k8s.Provider("kubernetes", { context: kube.require("context"), kubeconfig: kube.require("kubeconfig") });
const services = JSON.parse(fs.readFileSync(path.join(__dirname, "services.json"), "utf8"));
for (const s of services) {
  new k8s.core.v1.Service(`${s.metadata.namespace}-${s.metadata.name}`, { metadata: s.metadata, spec: s.spec }, { provider });
}
