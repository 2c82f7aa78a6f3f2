"""The exact FAISS index on the GPU where the gpu profile has the GPU build, and its CPU fallback (issue 56)."""
from __future__ import annotations

import types
import warnings

import faiss
import numpy as np
import pytest

from kbvqa.retrieval.faiss_index import FaissOnCPU, faiss_gpus, inner_product_index


def _vectors(n=20, d=8, seed=0):
    v = np.random.default_rng(seed).normal(size=(n, d)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_cpu_profile_builds_the_exact_cpu_index_silently():
    v = _vectors()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        index = inner_product_index(v, profile="cpu")
    scores, ids = index.search(v[:3], 1)
    assert list(ids[:, 0]) == [0, 1, 2] and np.allclose(scores[:, 0], 1.0, atol=1e-5)
    assert type(index).__name__ == "IndexFlatIP"


def test_gpu_profile_without_the_gpu_build_falls_back_with_one_note():
    assert faiss_gpus(faiss) == 0                       # the CPU build installed here
    v = _vectors()
    with pytest.warns(FaissOnCPU, match="same results"):
        index = inner_product_index(v, profile="gpu")
    assert np.array_equal(index.search(v, 5)[1], inner_product_index(v, profile="cpu").search(v, 5)[1])
    with pytest.raises(ValueError, match="GPU build"):
        inner_product_index(v, device="gpu")
    with pytest.raises(ValueError, match="device must be one of"):
        inner_product_index(v, device="tpu")


def test_gpu_profile_with_the_gpu_build_moves_the_index_to_gpu_0():
    moved = []

    def to_gpu(resources, device, index):
        moved.append(device)
        return index

    fake = types.SimpleNamespace(IndexFlatIP=faiss.IndexFlatIP, get_num_gpus=lambda: 1,
                                 StandardGpuResources=lambda: "resources", index_cpu_to_gpu=to_gpu)
    v = _vectors()
    index = inner_product_index(v, faiss=fake, profile="gpu")
    assert moved == [0] and index.ntotal == len(v)


def test_the_gpu_faiss_extra_is_the_gpu_extra_with_the_gpu_build():
    """pyproject's gpu-faiss extra = the gpu extra with faiss-gpu in place of faiss-cpu, at the same
    version (the two install the same ``faiss`` module, so an install takes one extra, never both);
    the fallback note names it."""
    import tomllib
    from pathlib import Path

    from packaging.requirements import Requirement

    extras = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())[
        "project"]["optional-dependencies"]
    gpu = {Requirement(r).name: Requirement(r) for r in extras["gpu"]}
    with_gpu_build = {Requirement(r).name: Requirement(r) for r in extras["gpu-faiss"]}
    assert "faiss-cpu" in gpu and "faiss-cpu" not in with_gpu_build and "faiss-gpu" not in gpu
    assert with_gpu_build["faiss-gpu"].specifier == gpu["faiss-cpu"].specifier
    assert {n: str(r) for n, r in with_gpu_build.items() if n != "faiss-gpu"} == \
        {n: str(r) for n, r in gpu.items() if n != "faiss-cpu"}
    with pytest.warns(FaissOnCPU, match=r"\[gpu-faiss\]"):
        inner_product_index(_vectors(), faiss=types.SimpleNamespace(IndexFlatIP=faiss.IndexFlatIP), profile="gpu")
