import { CONFIG_CHECKSUM } from "../cilium/rollout";
import { CHECK_LIMITS, field, POD_CONTAINER_LISTS } from "../exposure-model";

/**
 * What a reader holds of an object it listed: the fields the exposure model and the Cilium checks read, each list cut one
 * past the model's bound (CHECK_LIMITS), where the verdict no longer changes (an object past it is too large: exposure).
 * A tenant's Service with 14,000 ports or a workload with fat containers then costs what a small one costs once its page
 * is read, however much it holds. Everything else (a pod's volumes, env, probes, a template's annotations but the config
 * checksum) is dropped. Pure: the object is changed in place and returned.
 */
export function heldObject<T>(item: T): T {
  const spec = field(item, "spec");
  if (!isRecord(spec)) return item;
  cut(spec, "ports", CHECK_LIMITS.servicePorts + 1);
  cut(spec, "externalIPs", CHECK_LIMITS.externalIPs + 1);
  // A pod's own spec, a workload's template, a CronJob's job template.
  if (Array.isArray(spec.containers)) heldPodSpec(spec);
  for (const template of [field(spec, "template"), field(field(field(spec, "jobTemplate"), "spec"), "template")]) {
    if (!isRecord(template)) continue;
    const meta = field(template, "metadata");
    if (isRecord(meta)) {
      const checksum = field(field(meta, "annotations"), CONFIG_CHECKSUM);
      delete meta.annotations;
      if (typeof checksum === "string") meta.annotations = { [CONFIG_CHECKSUM]: checksum };
    }
    const podSpec = field(template, "spec");
    if (isRecord(podSpec)) heldPodSpec(podSpec);
  }
  return item;
}

const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);
const cut = (o: Record<string, unknown>, key: string, max: number) => {
  const v = o[key];
  if (Array.isArray(v) && v.length > max) o[key] = v.slice(0, max);
};

/** A pod spec as the model reads it: its node, the host network, and each container's name and ports, bounded. */
function heldPodSpec(spec: Record<string, unknown>): void {
  for (const key of Object.keys(spec)) if (!["nodeName", "hostNetwork", ...POD_CONTAINER_LISTS].includes(key)) delete spec[key];
  for (const list of POD_CONTAINER_LISTS) {
    cut(spec, list, CHECK_LIMITS.containers + 1);
    const containers = spec[list];
    if (!Array.isArray(containers)) continue;
    spec[list] = containers.map((c) => {
      if (!isRecord(c)) return c;
      const ports = Array.isArray(c.ports) ? c.ports.slice(0, CHECK_LIMITS.plainPortsPerContainer + 1) : c.ports;
      return { name: c.name, ...(ports === undefined ? {} : { ports }) };
    });
  }
}
