"""ckgemm.testing.rounds: the round-robin order, the per-round ratios, and the refusals (CPU); one GPU run."""
from collections import Counter

import pytest
import torch

from ckgemm.testing.rounds import RoundRobinResult, round_orders, round_robin


def test_every_round_holds_each_label_once_and_every_position_is_shared():
    labels = ["a", "b", "c", "d"]
    orders = round_orders(labels, 16)
    assert len(orders) == 16
    assert all(sorted(o) == labels for o in orders)
    for pos in range(len(labels)):  # each label first, second, ... equally often
        assert set(Counter(o[pos] for o in orders).values()) == {4}
    assert orders[0] == labels and orders[1] == labels[::-1]


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
