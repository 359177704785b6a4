export { createMetrics, METRICS_PATH } from './create-metrics.ts';
export type { DisarmMetrics, MetricsSources } from './create-metrics.ts';
