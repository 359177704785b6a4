export { POSTGRES_BIN_DIR, startTemporaryCluster } from './temporary-cluster.ts';
export type { TemporaryCluster } from './temporary-cluster.ts';
