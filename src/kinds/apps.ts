// apps/v1: Deployments and StatefulSets, judged by what their controllers report.
import { condition, list, num, record, str, type Obj } from '../kube.js';
import { generationObserved } from './conditions.js';
import { accessor, type Family } from './kind.js';
import { progressing, ready, stuck, updating, type Verdict } from './verdict.js';

function deployment(obj: Obj): Verdict {
  const want = num(obj, 'spec', 'replicas') ?? 1;
  const available = num(obj, 'status', 'availableReplicas') ?? 0;
  const updated = num(obj, 'status', 'updatedReplicas') ?? 0;
  const p = condition(obj, 'Progressing');
  if (p?.status === 'False' && p.reason === 'ProgressDeadlineExceeded') {
    return stuck(`rollout stuck (${available}/${want} replicas available): ${p.message ?? p.reason}`);
  }
  if (!generationObserved(obj)) return updating(`rollout pending (${available}/${want} replicas available)`);
  if (updated < want) return updating(`${updated}/${want} replicas updated, ${available}/${want} available`);
  if (available < want) return progressing(`${available}/${want} replicas available`);
  if (condition(obj, 'Available')?.status === 'False')
    return progressing(`${available}/${want} replicas available, not Available yet`);
  return ready(`${available}/${want} replicas available`);
}

function statefulSet(obj: Obj): Verdict {
  const want = num(obj, 'spec', 'replicas') ?? 1;
  const readyReplicas = num(obj, 'status', 'readyReplicas') ?? 0;
  const updated = num(obj, 'status', 'updatedReplicas') ?? 0;
  if (!generationObserved(obj)) return updating(`rollout pending (${readyReplicas}/${want} replicas ready)`);
  const current = str(obj, 'status', 'currentRevision');
  const update = str(obj, 'status', 'updateRevision');
  const onDelete = str(obj, 'spec', 'updateStrategy', 'type') === 'OnDelete';
  if (!onDelete && current !== undefined && update !== undefined && current !== update) {
    return updating(`${updated}/${want} replicas updated, ${readyReplicas}/${want} ready`);
  }
  if (readyReplicas < want) return progressing(`${readyReplicas}/${want} replicas ready`);
  return ready(`${readyReplicas}/${want} replicas ready`);
}

/** Its volumes outlive it once its controller has seen the Retain policy (and so let go of its claims). */
function retainsVolumes(obj: Obj): boolean {
  return (
    str(obj, 'spec', 'persistentVolumeClaimRetentionPolicy', 'whenDeleted') === 'Retain' && generationObserved(obj)
  );
}

export const APPS: Family = [
  { group: 'apps', kind: 'Deployment', judge: deployment },
  { group: 'apps', kind: 'StatefulSet', judge: statefulSet, holdsData: true, keepsDataWhenDeleted: retainsVolumes },
];

/**
 * An observed StatefulSet: its claim templates as observed (they cannot
 * change once it exists) with each one's name and storage request, the image
 * of a container of its pod template, an annotation of the template, and
 * whether its rollout is done (the controller has seen the newest spec and
 * every pod is on the update revision).
 */
export const statefulSetOf = accessor((obj) => {
  const templates = list(obj, 'spec', 'volumeClaimTemplates');
  const current = str(obj, 'status', 'currentRevision');
  return {
    volumeClaimTemplates: templates,
    claims: templates.map((t) => ({
      name: str(t, 'metadata', 'name'),
      storage: str(t, 'spec', 'resources', 'requests', 'storage'),
      annotations: record(t, 'metadata', 'annotations') as Record<string, string> | undefined,
    })),
    image: (container: string) =>
      str(
        list(obj, 'spec', 'template', 'spec', 'containers').find((c) => str(c, 'name') === container),
        'image',
      ),
    templateAnnotation: (name: string) => str(obj, 'spec', 'template', 'metadata', 'annotations', name),
    rolledOut: generationObserved(obj) && current !== undefined && current === str(obj, 'status', 'updateRevision'),
  };
});
