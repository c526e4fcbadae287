"""ckgemm.testing.rounds: the round-robin order, the per-round ratios, and the refusals (CPU); two GPU runs (graph
replay, and plain calls end to end)."""
import time
from collections import Counter

import pytest
import torch

from ckgemm.testing.rounds import RoundRobinResult, round_orders, round_robin


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 6])
def test_each_cycle_puts_every_label_in_every_position_and_after_every_other_equally(n):
    labels = [chr(ord("a") + i) for i in range(n)]
    cycle = n if n % 2 == 0 else 2 * n  # a Williams design: n rows, and their mirror images for odd n
    orders = round_orders(labels, 3 * cycle)
    assert all(sorted(o) == labels for o in orders)
    assert orders[:cycle] == orders[cycle:2 * cycle], "the design repeats"
    for pos in range(n):
        assert set(Counter(o[pos] for o in orders[:cycle]).values()) == {cycle // n}
    follows = Counter((o[i], o[i + 1]) for o in orders[:cycle] for i in range(n - 1))
    assert len(follows) == n * (n - 1), "every ordered pair of labels runs back to back"
    assert len(set(follows.values())) <= 1, follows


def test_round_orders_refuses_no_rounds_or_labels():
    with pytest.raises(ValueError, match="rounds >= 1"):
        round_orders(["a"], 0)
    with pytest.raises(ValueError, match="at least one label"):
        round_orders([], 3)


def test_ratios_pair_each_round_so_shared_drift_cancels():
    # both slow down by the same factor in rounds 2-3: each round's ratio stays 1.25
    result = RoundRobinResult({"ours": [1.0, 1.0, 2.0, 2.0], "peer": [1.25, 1.25, 2.5, 2.5]}, reference="ours")
    assert result.ratio("peer") == pytest.approx(1.25)
    assert result.ratio_range("peer") == pytest.approx((1.25, 1.25))
    assert result.ratio("ours", over="peer") == pytest.approx(0.8)
    assert result.median_ms("peer") == pytest.approx(1.875)


def test_the_ratio_is_paired_per_round_not_a_ratio_of_medians():
    result = RoundRobinResult({"ours": [1.0, 2.0, 3.0], "peer": [3.0, 2.2, 3.3]}, reference="ours")
    assert result.ratio("peer") == pytest.approx(1.1)  # rounds 3.0, 1.1, 1.1
    assert result.median_ms("peer") / result.median_ms("ours") == pytest.approx(1.5)  # unpaired: another answer
    assert result.ratio("ours", over="peer") == pytest.approx(1 / 1.1)


def test_ratio_range_is_the_p10_p90_of_the_rounds():
    ours = [1.0] * 11
    peer = [1.0 + i / 10 for i in range(11)]  # ratios 1.0 .. 2.0
    result = RoundRobinResult({"ours": ours, "peer": peer}, reference="ours")
    assert result.ratio("peer") == pytest.approx(1.5)
    assert result.ratio_range("peer") == pytest.approx((1.1, 1.9))


def test_result_refuses_an_unknown_reference_or_uneven_rounds():
    with pytest.raises(ValueError, match="reference 'x'"):
        RoundRobinResult({"a": [1.0]}, reference="x")
    with pytest.raises(ValueError, match="same non-zero number of rounds"):
        RoundRobinResult({"a": [1.0], "b": [1.0, 2.0]}, reference="a")


def test_round_robin_needs_a_gpu_and_a_known_reference():
    with pytest.raises(ValueError, match="not one of"):
        round_robin({"a": lambda: None}, reference="b", device="cpu")
    with pytest.raises(ValueError, match="needs a GPU"):
        round_robin({"a": lambda: None}, reference="a", device="cpu")


@pytest.mark.gpu
def test_round_robin_times_each_variant_every_round():
    if not torch.cuda.is_available():
        pytest.skip("needs a GPU")
    x = torch.randn(2048, 2048, device="cuda")
    out = torch.empty_like(x)
    result = round_robin({"one": lambda: torch.mm(x, x, out=out),
                          "four": lambda: [torch.mm(x, x, out=out) for _ in range(4)]},
                         reference="one", rounds=8, warmup_ms=20)
    assert all(len(t) == 8 and min(t) > 0 for t in result.times.values())
    assert 2.5 < result.ratio("four") < 5.5  # four matmuls take about four times one


@pytest.mark.gpu
def test_round_robin_times_plain_calls_end_to_end_with_sync():
    """graph=False calls the functions as they are; with sync each starts on an idle GPU, so a host-side delay
    before its kernel is inside its window. Under graph replay only the captured kernel is."""
    if not torch.cuda.is_available():
        pytest.skip("needs a GPU")
    x = torch.randn(1024, 1024, device="cuda")
    out = torch.empty_like(x)
    fns = {"mm": lambda: torch.mm(x, x, out=out),
           "late mm": lambda: (time.sleep(0.003), torch.mm(x, x, out=out))}
    synced = round_robin(fns, reference="mm", rounds=6, warmup_ms=10, graph=False, sync=True)
    assert min(synced.times["late mm"]) >= 3.0 > max(synced.times["mm"]), synced.times
    replayed = round_robin(fns, reference="mm", rounds=6, warmup_ms=10)
    assert max(replayed.times["late mm"]) < 3.0, replayed.times  # the sleep ran once, at capture
