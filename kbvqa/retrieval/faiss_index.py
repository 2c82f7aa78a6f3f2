"""An exact inner-product FAISS index, on the GPU when the gpu profile has the GPU build (issue 56).

``inner_product_index(vectors, device="auto")`` builds ``faiss.IndexFlatIP`` over float32 rows and
returns it, moved to GPU 0 (``faiss.index_cpu_to_gpu``) when ``device`` is "gpu", or is "auto" in the
gpu profile and the installed FAISS is the GPU build with a visible GPU. Where the GPU build is
missing (``faiss-cpu``, as in every cpu install and in the gpu extra; the ``gpu-faiss`` extra is the gpu
extra with ``faiss-gpu`` instead, for where that build installs on Colab's CUDA) "auto" stays on the
CPU and says so once (``FaissOnCPU``, a ``UserWarning``); asking
for "gpu" explicitly raises. The results are the same either way: a flat index is exact.

Leaves out: approximate indexes (IVF, HNSW): the book's knowledge bases are small enough to search
exactly.
"""
from __future__ import annotations

import warnings

import numpy as np

__all__ = ["FaissOnCPU", "faiss_gpus", "inner_product_index"]

DEVICES = ("auto", "cpu", "gpu")


class FaissOnCPU(UserWarning):
    """The gpu profile runs FAISS on the CPU: the installed build has no GPU support (or sees no GPU)."""


def faiss_gpus(faiss=None) -> int:
    """GPUs the installed FAISS can use (0 for the CPU build)."""
    if faiss is None:
        import faiss
    return int(faiss.get_num_gpus()) if hasattr(faiss, "get_num_gpus") and hasattr(faiss, "StandardGpuResources") \
        else 0


def inner_product_index(vectors, device: str = "auto", faiss=None, profile: str | None = None):
    """An exact inner-product index over ``vectors`` ([N, d], float32; cosine when normalised)."""
    if device not in DEVICES:
        raise ValueError(f"device must be one of {DEVICES}, got {device!r}")
    if faiss is None:
        import faiss
    vectors = np.ascontiguousarray(np.asarray(vectors, dtype=np.float32))
    if vectors.ndim != 2:
        raise ValueError(f"vectors must be [N, d], got shape {vectors.shape}")
    index = faiss.IndexFlatIP(vectors.shape[1])
    if device == "auto":
        if profile is None:
            from kbvqa.config import get_profile

            profile = get_profile().name
        if profile != "gpu":
            device = "cpu"
        elif faiss_gpus(faiss):
            device = "gpu"
        else:
            warnings.warn("the installed FAISS has no GPU build (or sees no GPU): its exact index runs on the "
                          "CPU, with the same results (the GPU build: pip install 'kbvqa-book[gpu-faiss]')", FaissOnCPU,
                          stacklevel=2)
            device = "cpu"
    if device == "gpu":
        if not faiss_gpus(faiss):
            raise ValueError("device='gpu' needs FAISS's GPU build and a visible GPU; this FAISS has none "
                             "(use device='auto' or 'cpu', or install faiss-gpu-cu12)")
        index = faiss.index_cpu_to_gpu(faiss.StandardGpuResources(), 0, index)
    index.add(vectors)
    return index
