import * as fs from "node:fs";
import { UserError } from "../core/errors";
import { SnapshotReader } from "../core/kube/cluster";

/** A cluster snapshot file (`kubectl get ... -o yaml`), read as an offline ClusterReader. */
export function readSnapshotFile(file: string): SnapshotReader {
  let text: string;
  try {
    text = fs.readFileSync(file, "utf8");
  } catch (err) {
    throw new UserError(`cannot read cluster snapshot ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  return SnapshotReader.parse(text, file);
}
