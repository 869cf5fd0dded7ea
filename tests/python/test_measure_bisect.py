"""tools/measure/bench_util.py bisect_block, the allocator-limit bisection of alloc_limit.py and
mcore_alloc_limit.py, against a trial whose limit is known (no GPU: torch is stubbed)."""
import os
import random
import sys
import types

sys.modules.setdefault("torch", types.ModuleType("torch"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tools", "measure"))
import bench_util  # noqa: E402

GIB = 1 << 30


def run(total, context, peak0, limit, step, below):
    calls = []

    def trial(block):
        calls.append(block)
        assert len(calls) < 100, "the bisection does not narrow"
        return block <= limit, peak0 + block, peak0 + block, 0

    return bench_util.bisect_block(trial, total, context, peak0, peak0, step, below), calls


def test_finds_the_largest_block_to_the_step():
    # 150 GiB GPU, 0.6 GiB context, a 56.4 GiB step: the largest block that runs is 88.1 GiB.
    (block, peak, _, _), _ = run(150 * GIB, int(0.6 * GIB), int(56.4 * GIB), int(88.1 * GIB), 128 << 20, 6 * GIB)
    assert block % (128 << 20) == 0
    assert int(88.1 * GIB) - (128 << 20) < block <= int(88.1 * GIB)
    assert peak == int(56.4 * GIB) + block


def test_a_step_coarser_than_the_gap_still_ends():
    # Room 90 GiB: the ends are 84 and 91 GiB, 7 GiB apart with a 6 GiB step, where the rounded
    # midpoint is the lower end itself; a bisection that tries it again never narrows.
    (block, _, _, _), calls = run(150 * GIB, 0, 60 * GIB, 85 * GIB + GIB // 2, 6 * GIB, 6 * GIB)
    assert block == 84 * GIB
    assert len(calls) < 10


def test_random_limits():
    rng = random.Random(7)
    for _ in range(500):
        total, context, peak0 = 150 * GIB, rng.randint(0, GIB), rng.randint(1, 100 * GIB)
        limit = rng.randint(0, total - context - peak0 + GIB // 2)
        step = rng.choice([128 << 20, 2 * GIB, 3 * GIB, 6 * GIB])
        (block, _, _, _), _ = run(total, context, peak0, limit, step, 6 * GIB)
        assert block % step == 0 and block <= limit < block + step
