import { SnapshotReader } from "../core/kube/cluster";
import { FILE_LIMITS, readBoundedText } from "./bounded-file";

/** A cluster snapshot file (`kubectl get ... -o yaml`), read as an offline ClusterReader. */
export function readSnapshotFile(file: string): SnapshotReader {
  return SnapshotReader.parse(readBoundedText(file, "cluster snapshot", FILE_LIMITS.snapshot), file);
}
