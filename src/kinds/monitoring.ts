// monitoring.coreos.com: the Prometheus Operator's kinds. A PrometheusRule has
// no status: the operator reads it into Prometheus's rule files, and nothing
// it writes back says whether that happened, so it is ready once it exists.
import { exists } from './conditions.js';
import type { Family } from './kind.js';

export const MONITORING: Family = [{ group: 'monitoring.coreos.com', kind: 'PrometheusRule', judge: exists }];
