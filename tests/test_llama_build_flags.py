"""Issue 27 #4: `make install` builds llama.cpp for the CPU it runs on, family by family, and never for AMX.

The Makefile reads ``/proc/cpuinfo``'s flags into ``CPU_FLAGS``; these tests give it made-up flag lists through
``make CPU_FLAGS=...`` (nothing is built: a ``--eval`` target prints the CMake arguments), then check that the
installed llama.cpp is the build this machine's flags call for.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
AVX512_BASE = "avx512f avx512cd avx512vl avx512dq avx512bw"
#: what a Sapphire-Rapids-class Xeon lists (the machine of bench/results/llama-builds.md), AMX included
XEON = f"fpu sse4_2 avx avx2 fma f16c avx_vnni {AVX512_BASE} avx512vbmi avx512_vnni avx512_bf16 avx512_fp16 " \
       "amx_tile amx_int8 amx_bf16"
EPYC_AVX2 = "fpu sse4_2 avx avx2 fma f16c"


def _cmake_args(cpu_flags: str) -> dict[str, str]:
    if shutil.which("make") is None:
        pytest.fail("make is not installed: the install path (README) needs it")
    out = subprocess.run(["make", "-s", f"CPU_FLAGS={cpu_flags}", "--eval",
                          "print-llama-args: ; @echo $(LLAMA_CMAKE_ARGS)", "print-llama-args"],
                         cwd=REPO, capture_output=True, text=True, check=True).stdout
    return dict(arg.removeprefix("-D").split("=", 1) for arg in out.split())


def test_a_xeon_that_lists_amx_gets_every_avx512_family_but_never_amx() -> None:
    args = _cmake_args(XEON)
    assert args["GGML_NATIVE"] == "OFF"
    for family in ("GGML_AVX2", "GGML_AVX512", "GGML_AVX512_VBMI", "GGML_AVX512_VNNI", "GGML_AVX512_BF16",
                   "GGML_AVX_VNNI"):
        assert args[family] == "ON", family
    assert [args[f] for f in ("GGML_AMX_TILE", "GGML_AMX_INT8", "GGML_AMX_BF16")] == ["OFF"] * 3


def test_an_avx2_only_cpu_gets_no_avx512() -> None:
    args = _cmake_args(EPYC_AVX2)
    assert args["GGML_AVX2"] == "ON"
    assert all(args[f] == "OFF" for f in args if "AVX512" in f or "AMX" in f or f == "GGML_AVX_VNNI")


def test_an_extension_counts_only_with_the_whole_avx512_base() -> None:
    # VNNI listed but BW missing: no AVX-512 at all, so no AVX-512 extension either
    args = _cmake_args("avx2 fma f16c avx512f avx512cd avx512vl avx512dq avx512_vnni")
    assert args["GGML_AVX512"] == "OFF" and args["GGML_AVX512_VNNI"] == "OFF"
    args = _cmake_args(f"avx2 fma f16c {AVX512_BASE} avx512_vnni")
    assert (args["GGML_AVX512"], args["GGML_AVX512_VNNI"], args["GGML_AVX512_VBMI"]) == ("ON", "ON", "OFF")


def test_the_installed_llama_cpp_is_the_build_this_cpus_flags_call_for() -> None:
    llama_cpp = pytest.importorskip("llama_cpp", reason="the [local] extra is not installed")
    flags = next((line.split(":", 1)[1].split() for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("flags")), [])
    info = llama_cpp.llama_print_system_info().decode()
    assert "AMX" not in info, info
    want_avx512 = all(f in flags for f in AVX512_BASE.split())
    assert ("AVX512 = 1" in info) == want_avx512, f"{info} (CPU lists AVX-512: {want_avx512}); run make install"
    if want_avx512 and "avx512_vnni" in flags:
        assert "AVX512_VNNI = 1" in info, info
