"""Kernel names people can read, kernels over all ranks, and the operator view
(traceview.analysis.kernels).

This file holds the topic's unit tests; the others are in tests/corpus/test_kernels.py.
"""

from __future__ import annotations

import polars as pl
import pytest

from tests.support.samples import shared_sample
from traceview.analysis.kernels import kernel_totals, operators, short_names

ADD = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)"


FILL = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)"


THRESHOLD = "void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<float, float, float, at::native::(anonymous namespace)::threshold_kernel_impl<float>(at::TensorIteratorBase&, float, float)::{lambda(float, float)#1}>, at::detail::Array<char*, 3> >(int, at::native::BinaryFunctor<float, float, float, at::native::(anonymous namespace)::threshold_kernel_impl<float>(at::TensorIteratorBase&, float, float)::{lambda(float, float)#1}>, at::detail::Array<char*, 3>)"


BN_128 = "void cudnn::bn_bw_1C11_kernel_new<float, float, float2, 128, true, 1>(float, float, float, float, cudnnTensorStruct, float const*)"


BN_512 = "void cudnn::bn_bw_1C11_kernel_new<float, float, float2, 512, true, 1>(float, float, float, float, cudnnTensorStruct, float const*)"


POOL = (
    "void at::native::(anonymous namespace)::max_pool_backward_nchw<float, float>(float const*, long const*, int, long)"
)


def test_short_names_fold_and_stay_distinct():
    got = short_names(
        [ADD, FILL, THRESHOLD, BN_128, BN_512, POOL, "ncclKernel_AllReduce_RING_LL_Sum_float", "MatMulV2"]
    )
    assert got[ADD] == "at::native::vectorized_elementwise_kernel<…> [CUDAFunctor_add]"
    assert got[FILL] == "at::native::vectorized_elementwise_kernel<…> [FillFunctor]"
    assert got[THRESHOLD] == "at::native::vectorized_elementwise_kernel<…> [threshold_kernel_impl]"
    assert got[BN_128] == "cudnn::bn_bw_1C11_kernel_new<float, float, float2, 128, true, 1>"
    assert got[BN_512] == "cudnn::bn_bw_1C11_kernel_new<float, float, float2, 512, true, 1>"
    assert got[POOL] == "at::native::max_pool_backward_nchw<…>"
    assert got["ncclKernel_AllReduce_RING_LL_Sum_float"] == "ncclKernel_AllReduce_RING_LL_Sum_float"
    assert got["MatMulV2"] == "MatMulV2"
    # names alike in every way get numbers, in name order
    twins = short_names(["void k<float, " + "9" * 60 + "1>(int)", "void k<float, " + "9" * 60 + "2>(int)"])
    assert sorted(twins.values()) == ["k<…> #1", "k<…> #2"]


def test_kernel_totals_over_ranks():
    trace = shared_sample("dp4_nccl")
    classified = trace.classified_tasks()
    totals = kernel_totals(classified, n=1000)
    per_rank = classified.group_by("name", "rank").agg((pl.col("dur_ns").sum() / 1000).alias("us"))
    assert totals["total_us"].sum() == pytest.approx(classified["dur_ns"].sum() / 1000)
    assert totals["share"].sum() == pytest.approx(1.0)
    for row in totals.head(5).to_dicts():
        mine = per_rank.filter(pl.col("name") == row["name"])
        assert row["ranks"] == mine.height
        assert (row["rank_min_us"], row["rank_max_us"]) == pytest.approx((mine["us"].min(), mine["us"].max()))
        assert row["rank_median_us"] == pytest.approx(mine["us"].median())
        assert mine.filter(pl.col("us") == mine["us"].max())["rank"].min() == row["max_rank"]
    assert totals["total_us"].is_sorted(descending=True)


def test_operators_account_for_the_launched_time():
    trace = shared_sample("dp4_nccl")
    classified = trace.classified_tasks()
    ops = operators(classified, n=10_000)
    launched = classified.filter(pl.col("launch_op").is_not_null())
    assert ops["device_us"].sum() == pytest.approx(launched["dur_ns"].sum() / 1000)
    assert ops["kernels"].sum() == launched.height
    fused = ops.filter(pl.col("operator") == "aten::_fused_adamw_").row(0, named=True)
    assert fused["input_shapes"] is not None and fused["calls"] == 12  # 3 steps x 4 ranks, two kernels each
    assert fused["kernels"] == 24


def test_summary_tables_use_one_short_name_per_kernel():
    from traceview.summary import build_summary

    doc = build_summary(shared_sample("dp4_nccl"))
    names = {}
    for k in doc["kernels"] + [k for r in doc["ranks"] for k in r["top_kernels"]]:
        assert names.setdefault(k["name"], k["short_name"]) == k["short_name"]
    for o in doc["operators"]:
        assert names.get(o["top_kernel"], o["top_kernel_short"]) == o["top_kernel_short"]


def test_short_names_and_top_kernels_of_some_ranks_are_declared_analyses():
    """What the dashboard's tables and `t.plot.kernels(ranks=...)` show comes from declared
    analyses: `kernel_short_names` (every task name, one short name each) and `top_kernels` over
    the tasks of some ranks only."""
    trace = shared_sample("dp4_nccl")
    names = trace.kernel_short_names()
    assert names.height == names["name"].n_unique() == trace.device_tasks["name"].n_unique()
    assert dict(zip(names["name"], names["short_name"])) == short_names(trace.device_tasks["name"].unique().to_list())
    some = trace.top_kernels(5, by=(), ranks=[1, 3])
    tasks = trace.classified_tasks().filter(pl.col("rank").is_in([1, 3]))
    totals = tasks.group_by("name").agg(pl.col("dur_ns").sum()).sort("dur_ns", descending=True)
    assert some["total_us"].to_list() == pytest.approx((totals["dur_ns"].head(5) / 1000).to_list())
    assert some["share"].to_list() == pytest.approx((totals["dur_ns"].head(5) / tasks["dur_ns"].sum()).to_list())
    assert trace.top_kernels(5, by=(), ranks=[0, 1, 2, 3]).equals(trace.top_kernels(5, by=()))
