"""Kubernetes: `kubectl cordon` and `kubectl drain`; drained when only DaemonSet pods remain."""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any

from .base import Scheduler, SchedulerError, SchedulerUnavailable, run_tool

if TYPE_CHECKING:
    from fleet.models import Node

logger = logging.getLogger(__name__)

# Seconds one `kubectl drain` may wait for evictions. Short: the phase looks again later rather
# than hold a worker, and evictions already granted go on after kubectl returns.
DRAIN_CALL_S = 20


def blocking_pods(pods: dict[str, Any]) -> list[str]:
    """Pods of a `kubectl get pods -o json` list that still keep the node busy.

    DaemonSet pods (they run on every node, drain leaves them) and static mirror pods do not
    count, nor pods that already ended.
    """
    names = []
    for pod in pods.get("items", []):
        meta = pod.get("metadata", {})
        if pod.get("status", {}).get("phase") in ("Succeeded", "Failed"):
            continue
        if any(ref.get("kind") == "DaemonSet" for ref in meta.get("ownerReferences") or []):
            continue
        if "kubernetes.io/config.mirror" in (meta.get("annotations") or {}):
            continue
        names.append(f"{meta.get('namespace', '')}/{meta.get('name', '')}")
    return names


class KubernetesScheduler(Scheduler):
    name = "kubernetes"
    label = "Kubernetes"

    def cordon(self, node: Node, reason: str) -> None:
        run_tool(["kubectl", "cordon", self.node_name(node)])
        self._evict(node)

    def is_drained(self, node: Node) -> bool:
        out = run_tool(
            ["kubectl", "get", "pods", "--all-namespaces", "-o", "json"]
            + ["--field-selector", f"spec.nodeName={self.node_name(node)}"]
        )
        try:
            busy = blocking_pods(json.loads(out))
        except ValueError:
            raise SchedulerError("kubectl get pods printed something other than JSON") from None
        if busy:
            # Ask again: a PodDisruptionBudget may have refused an eviction the last time.
            self._evict(node)
        return not busy

    def uncordon(self, node: Node) -> None:
        run_tool(["kubectl", "uncordon", self.node_name(node)])

    def _evict(self, node: Node) -> None:
        try:
            run_tool(
                ["kubectl", "drain", self.node_name(node), "--ignore-daemonsets"]
                + ["--delete-emptydir-data", f"--timeout={DRAIN_CALL_S}s"],
                timeout=DRAIN_CALL_S + 30,
            )
        except SchedulerUnavailable:
            raise
        except SchedulerError as exc:
            # A drain that timed out on a slow pod is not a failure: is_drained looks again.
            logger.info("kubectl drain %s: %s", self.node_name(node), exc)
