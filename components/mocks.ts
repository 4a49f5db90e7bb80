// The one set of Pulumi mocks: `exposure render` and the unit tests run the real program against it. It answers like the API server where the program depends
// on the answer (ids, auto-names, allocated nodePorts) and records every registration.
import * as pulumi from "@pulumi/pulumi";
import { RELEASE_TYPE } from "../src/core/cilium/adopt";
import { UserError } from "../src/core/errors";
import type { Service } from "../src/core/kube/types";
import { PROJECT } from "../src/core/settings";

export interface RegisteredResource {
  type: string;
  /** Resource name in the program (not metadata.name). */
  name: string;
  inputs: Record<string, unknown>;
  /** Name of the explicit provider resource the registration went through, if any. */
  provider?: string;
}

interface MockOptions {
  stack: string;
  preview?: boolean;
  /** Services already in the cluster ("namespace/name"): a registered Service of the same name keeps their allocated nodePorts, as an update does. */
  existing?: ReadonlyMap<string, Service>;
  /** A new NodePort Service's nodePorts: `allocate` from 31000 on (as an `up` would), `pending` none (`exposure render` never invents a port). */
  nodePorts?: "allocate" | "pending";
}

const NODE_PORT_MIN = 30000;
const NODE_PORT_RANGE = 2768;

/** `kubernetes:core/v1:Service` -> { apiVersion: "v1", kind: "Service" }. */
export function manifestTypeOf(token: string): { apiVersion: string; kind: string } | undefined {
  const [pkg, groupVersion, kind] = token.split(":");
  if (pkg !== "kubernetes" || !groupVersion || !kind) return undefined;
  const [group, version] = groupVersion.split("/");
  if (!group || !version) return undefined;
  return { apiVersion: group === "core" ? version : `${group}/${version}`, kind };
}

/** Replaces Pulumi's runtime with mocks for one program run; call `pulumi.runtime.disconnect()` after the run so every registration has finished. */
export async function useProgramMocks(opts: MockOptions): Promise<{ resources: RegisteredResource[] }> {
  const recording = { resources: [] as RegisteredResource[] };
  const allocate = (opts.nodePorts ?? "allocate") === "allocate";
  let next = 31000 - NODE_PORT_MIN;

  await pulumi.runtime.setMocks(
    {
      newResource: (args) => {
        const inputs = args.inputs as Record<string, unknown>;
        const provider = args.provider ? /::([^:]+)::[^:]*$/.exec(args.provider)?.[1] : undefined;
        recording.resources.push({ type: args.type, name: args.name, inputs, ...(provider ? { provider } : {}) });
        if (args.type === RELEASE_TYPE) return { id: `${inputs.namespace}/${inputs.name}`, state: inputs };
        const type = manifestTypeOf(args.type);
        if (!type) return { id: `${args.name}-id`, state: inputs };
        const meta = (inputs.metadata ?? {}) as { name?: string; namespace?: string };
        // Auto-naming, as the provider does it.
        const name = meta.name ?? `${args.name}-abc123`;
        const manifest = { ...type, ...inputs, metadata: { ...meta, name } };
        const id = meta.namespace ? `${meta.namespace}/${name}` : name;
        if (type.kind !== "Service") return { id, state: manifest };
        const spec = (inputs.spec ?? {}) as { type?: string; ports?: { name?: string; nodePort?: number }[] };
        const live = opts.existing?.get(`${meta.namespace}/${name}`);
        const ports = (spec.ports ?? []).map((p) => {
          const kept = live?.spec?.ports?.find((lp) => lp.name === p.name)?.nodePort;
          if (p.nodePort || spec.type !== "NodePort") return p;
          if (kept) return { ...p, nodePort: kept };
          return allocate ? { ...p, nodePort: NODE_PORT_MIN + (next++ % NODE_PORT_RANGE) } : p;
        });
        return { id, state: { ...manifest, spec: { ...spec, ports } } };
      },
      call: (args) => {
        throw new UserError(`unexpected provider call ${args.token} under mocks`);
      },
    },
    PROJECT,
    opts.stack,
    opts.preview ?? false,
  );
  return recording;
}

/** The value of an output once known (under mocks every output becomes known). */
export function resolved<T>(output: pulumi.Output<T>): Promise<T> {
  return new Promise<T>((resolve) => output.apply(resolve));
}
