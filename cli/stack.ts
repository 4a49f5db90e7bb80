import { LiveClusterReader } from "../src/adapters/kube-live";
import { readStackOutputs } from "../src/adapters/pulumi-cli";
import type { OpenStack } from "../src/adapters/stack-inputs";
import type { ClusterReader } from "../src/core/kube/cluster";
import type { PublishedEndpoints } from "../src/core/observe";
import { stackKubeTarget } from "../src/core/settings";

/**
 * The live cluster of a stack, through the same kubeconfig/context as its provider.
 * `KUBECONFIG` still applies when the stack does not set kubernetes:kubeconfig.
 */
export function connectCluster(opened: OpenStack, timeoutMs?: number): Promise<ClusterReader> {
  return LiveClusterReader.connect({ ...stackKubeTarget(opened.stack, opened.config), ...(timeoutMs ? { timeoutMs } : {}) });
}

export function publishedEndpoints(outputs: Record<string, unknown>): PublishedEndpoints {
  const endpoints = outputs.endpoints;
  return endpoints && typeof endpoints === "object" ? (endpoints as PublishedEndpoints) : {};
}

export { type OpenStack, openStack } from "../src/adapters/stack-inputs";
export { readStackOutputs };
