import * as fs from "node:fs";
import * as path from "node:path";
import { LiveClusterReader } from "../src/adapters/kube-live";
import { readStackOutputs } from "../src/adapters/pulumi-cli";
import type { OpenStack } from "../src/adapters/stack-inputs";
import { UserError } from "../src/core/errors";
import type { ClusterReader } from "../src/core/kube/cluster";
import type { PublishedEndpoints } from "../src/core/observe";
import { publishedFromOutputs } from "../src/core/published";
import { stackKubeTarget } from "../src/core/settings";

/**
 * The live cluster of a stack, through the same kubeconfig/context as its provider.
 * `KUBECONFIG` still applies when the stack does not set kubernetes:kubeconfig.
 */
export async function connectCluster(opened: OpenStack, timeoutMs?: number, env: NodeJS.ProcessEnv = process.env): Promise<ClusterReader> {
  try {
    return await LiveClusterReader.connect({ ...stackKubeTarget(opened.stack, opened.config), ...(timeoutMs ? { timeoutMs } : {}) });
  } catch (err) {
    // The sandbox's kubeconfig is set by its env file: without it, say so (the usual first miss).
    const sandbox = path.join(opened.projectDir, ".sandbox");
    if (err instanceof UserError && fs.existsSync(path.join(sandbox, "env")) && env.KUBECONFIG !== path.join(sandbox, "kubeconfig")) {
      const rel = path.relative(process.cwd(), path.join(sandbox, "env")) || ".sandbox/env";
      throw new UserError(
        `${err.message}\n(a sandbox runs in this folder: run \`. ${rel}\` in this shell first; it sets KUBECONFIG to the sandbox's)`,
        err.exitCode,
      );
    }
    throw err;
  }
}

/** The `endpoints` output, checked (src/core/published.ts): a malformed one is an error naming the field. */
export function publishedEndpoints(outputs: Record<string, unknown>, source = "stack outputs"): PublishedEndpoints {
  return publishedFromOutputs(outputs, source);
}

export { type OpenStack, openStack } from "../src/adapters/stack-inputs";
export { readStackOutputs };
