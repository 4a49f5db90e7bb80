import * as fs from "node:fs";
import * as path from "node:path";
import * as pulumi from "@pulumi/pulumi";
import { parseDocument } from "yaml";
import { readStackConfig } from "../adapters/stack-config";
import { UserError } from "../core/errors";
import type { ClusterReader } from "../core/kube/cluster";
import type { Service } from "../core/kube/types";
import { PROJECT } from "../core/settings";
import { uiExposure } from "./program";

export interface RenderedRelease {
  chart: string;
  version: string;
  namespace: string;
  name: string;
  repository?: string;
  values: Record<string, unknown>;
}

export interface Rendered {
  /** Kubernetes manifests the stack would apply. */
  objects: Record<string, unknown>[];
  releases: RenderedRelease[];
  outputs: Record<string, unknown>;
}

/** `kubernetes:core/v1:Service` -> { apiVersion: "v1", kind: "Service" }. */
export function manifestTypeOf(token: string): { apiVersion: string; kind: string } | undefined {
  const [, groupVersion, kind] = token.split(":");
  if (!groupVersion || !kind) return undefined;
  const [group, version] = groupVersion.split("/");
  if (!group || !version) return undefined;
  return { apiVersion: group === "core" ? version : `${group}/${version}`, kind };
}

/**
 * Runs the real program under Pulumi's mocks against a cluster snapshot and returns what
 * the stack would create. A managed Service already in the snapshot keeps its real
 * nodePort; a new one shows the port as pending, never an invented number.
 */
export async function render(opts: { projectDir: string; stack: string; cluster: ClusterReader; contract?: string }): Promise<Rendered> {
  const config = readStackConfig(opts.projectDir, opts.stack);
  if (opts.contract) config[`${PROJECT}:contract`] = path.resolve(opts.contract);
  const existing = new Map((await opts.cluster.listServices()).map((s) => [`${s.metadata.namespace}/${s.metadata.name}`, s]));
  const objects: Record<string, unknown>[] = [];
  const releases: RenderedRelease[] = [];

  await pulumi.runtime.setMocks(
    {
      newResource: (args) => {
        const inputs = args.inputs as Record<string, unknown>;
        if (args.type === "kubernetes:helm.sh/v3:Release") {
          const repo = (inputs.repositoryOpts as { repo?: string } | undefined)?.repo;
          releases.push({
            chart: String(inputs.chart),
            version: String(inputs.version),
            namespace: String(inputs.namespace),
            name: String(inputs.name),
            ...(repo ? { repository: repo } : {}),
            values: (inputs.values as Record<string, unknown>) ?? {},
          });
          return { id: `${inputs.namespace}/${inputs.name}`, state: inputs };
        }
        const type = manifestTypeOf(args.type);
        if (!type || !args.type.startsWith("kubernetes:")) return { id: `${args.name}-id`, state: inputs };
        const manifest = { ...type, ...inputs };
        // A ServicePatch (the nodePort hold) patches our own Service: no object of its own.
        if (!args.type.endsWith("Patch")) objects.push(manifest);
        const meta = inputs.metadata as { name?: string; namespace?: string } | undefined;
        const live = existing.get(`${meta?.namespace}/${meta?.name}`);
        return { id: `${meta?.namespace}/${meta?.name}`, state: type.kind === "Service" && live ? withLivePorts(manifest, live) : manifest };
      },
      call: (args) => {
        throw new UserError(`render: unexpected provider call ${args.token}`);
      },
    },
    "ui-exposure",
    opts.stack,
    false,
  );

  const outputs = await uiExposure({ projectDir: opts.projectDir, stack: opts.stack, config, cluster: opts.cluster });
  const resolved = await new Promise<Record<string, unknown>>((resolve) => pulumi.output(outputs).apply((o) => resolve(o as Record<string, unknown>)));
  await pulumi.runtime.disconnect();
  return { objects, releases, outputs: resolved };
}

/** Copies the allocated nodePorts of a live Service onto our manifest's ports (matched by name). */
function withLivePorts(manifest: Record<string, unknown>, live: Service): Record<string, unknown> {
  const spec = manifest.spec as { ports?: { name?: string }[] } | undefined;
  return {
    ...manifest,
    spec: {
      ...spec,
      ports: (spec?.ports ?? []).map((p) => {
        const nodePort = live.spec?.ports?.find((lp) => lp.name === p.name)?.nodePort;
        return nodePort ? { ...p, nodePort } : p;
      }),
    },
  };
}
