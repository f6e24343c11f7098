"""Greenlight's reference job output (format version 1) for a simulated node.

Mirrors agent.reference_job's records without importing it (that module needs torch): a healthy
H100 trains the "standard" model at about 42% MFU, a GPU that throttles under load at about 22%.
"""

from __future__ import annotations

from .node import Fault, SimNode, faulty_gpus

# agent.reference_job's "standard" model: layers=4 d_model=2048 heads=16 ff=8192 seq=1024 batch=8
# vocab=32768; FLOPs per step as its ModelSize.flops_per_step() counts them.
STANDARD_MODEL = (
    "model size=standard layers=4 d_model=2048 heads=16 ff=8192 seq=1024 batch=8 vocab=32768 "
    "params=335683584 flops_per_step={flops}"
)
HEALTHY_MFU = 0.42
THROTTLED_MFU = 0.22


def standard_flops_per_step() -> float:
    """The FLOPs of one training step of the standard model (the agent's formula)."""
    d, s, ff, layers, vocab, batch = 2048, 1024, 8192, 4, 32768, 8
    per_token = layers * 2 * (4 * d * d + 2 * d * ff + 2 * s * d) + 2 * d * vocab
    return 3.0 * per_token * batch * s


def reference_job_text(
    node: SimNode,
    faults: Fault | list[Fault] | None = None,
    peak_tflops: float = 989.0,
    steps: int = 20,
) -> str:
    """The job's output on every GPU of the node; thermal throttling lowers that GPU's MFU."""
    rng = node.rng(f"reference-job:{steps}")
    slow = faulty_gpus(faults, "thermal_throttle")
    flops_per_step = standard_flops_per_step()
    lines = ["greenlight-reference-job 1", STANDARD_MODEL.format(flops=flops_per_step)]
    label = node.gpu_model.replace(" ", "_")
    for i in range(node.gpu_count):
        device = f"cuda:{i}"
        lines.append(
            f"device name={device} kind=cuda dtype=bfloat16 peak_tflops={float(peak_tflops)} "
            f"label={label}"
        )
        losses = [round(10.4 - 0.31 * n + rng.uniform(-0.02, 0.02), 5) for n in range(steps)]
        lines += [f"step device={device} n={n + 1} loss={loss}" for n, loss in enumerate(losses)]
        mfu = (THROTTLED_MFU if i in slow else HEALTHY_MFU) + rng.uniform(-0.01, 0.01)
        achieved = mfu * peak_tflops
        seconds = flops_per_step * steps / (achieved * 1e12)
        lines.append(
            f"result device={device} steps={steps} seconds={seconds:.6f} "
            f"flops={flops_per_step * steps} achieved_tflops={achieved:.6f} mfu={mfu:.6f} "
            f"loss_first={losses[0]} loss_last={losses[-1]}"
        )
    lines.append(f"end devices={node.gpu_count} results={node.gpu_count} errors=0")
    return "\n".join(lines) + "\n"
