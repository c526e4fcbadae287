"""Expert-parallel MoE correctness under torch.distributed (gloo on CPU, NCCL on NVIDIA, RCCL on ROCm).

Each rank runs an expert-parallel MoE layer (``layer.EPMoE``: route, count exchange and split handshake,
all-to-all dispatch into NaN-filled buffers, reorder by local expert, the grouped GEMM as a callable,
return, fixed-order fp32 combine) and checks every stage against a reference it rebuilds alone from one
shared seed (``reference``), in an order that names the first stage that fails (``checks``); verdicts are
all-reduced so any rank's failure fails every rank (``verdict``). ``faults`` injects rank-coordination bugs
that the checks must catch; ``bench`` times the phases. docs/DISTRIBUTED.md says how to run it.

Modules, in data-flow order: ``config`` (cases), ``router`` (scenarios, seeded top-k), ``recipes``
(quantization), ``batch`` (the shared synthetic data), ``exchange`` (collectives), ``faults``, ``layer``,
``reference``, ``checks``, ``verdict``, ``flow`` (one rank's run), ``selftest``, ``bench``, ``world``
(starting worlds), ``cli`` (``python -m ckgemm.testing.distributed``).

``import ckgemm.testing`` does not load this package (it needs ``torch.distributed``); import it by name.
"""
from .config import Case, MoEConfig, grid
from .faults import FAULTS
from .flow import CaseResult, run_case, run_flow
from .world import World, init_from_env, launch, run_in_process
from .layer import EPMoE
from .router import SCENARIOS
from .selftest import run_self_test

__all__ = ["EPMoE", "FAULTS", "SCENARIOS", "Case", "CaseResult", "MoEConfig", "World", "grid", "init_from_env", "launch",
           "run_case", "run_flow", "run_in_process", "run_self_test"]
