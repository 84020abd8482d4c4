"""The shipped registry is parsed once and kept in the cache dir (registry.shipped_registry): a process
that finds it must classify exactly as one that parsed registry.toml, and a cache file that is
damaged or stale must never change what a name reads as."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kerneldiff.core.analysis import classify as cl
from kerneldiff.core.analysis import registry as reg_mod
from kerneldiff.core.analysis import rule_matcher as rm

NAMES = [
    "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>",
    "ampere_bf16_s16816gemm_bf16_128x64_ldg8_f2f_stages_64x4_tn",
    "triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_0",
    "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
    "void flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4>, true>(Flash_fwd_params)",
    "_ZN5aiter24fmoe_bf16_g1u1_silu_kernelEv", "nvjet_tst_128x64_64x4_1x1_v_bz_coopA_N", "Memcpy DtoD (Device -> Device)",
    "kernel_stage1", "all_reduce_kernel", "x" * 300,
]
OPS = ["aten::mm", "aten::_cudnn_attention_forward", "vllm::unified_attention_with_output", "aten::copy_", "foo::bar"]

# what a fresh process reads: every name's (category, rule), every op's rule, the fusion evidence
PROBE = f"""
import json, sys
from kerneldiff.core.analysis import classify as cl
c = cl.Classifier.load()
names, ops = {NAMES!r}, {OPS!r}
out = {{"classify": [c.classify(n) for n in names],
       "ops": [getattr(c.op_rule(o), "id", None) for o in ops],
       "matches": [[c.matches(n, cat) for cat in c.categories] for n in names],
       "rules": repr(c.rules), "op_rules": repr(c.op_rules), "parsed": "tomllib" in sys.modules}}
print(json.dumps(out))
"""


def _probe(cache_home) -> dict:
    import os
    env = dict(os.environ, XDG_CACHE_HOME=str(cache_home))
    r = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True)
    return json.loads(r.stdout)


def _files(cache_home):
    return sorted((cache_home / "kerneldiff" / "registry").glob("shipped-*.json"))


@pytest.mark.slow
def test_cached_registry_reads_as_the_parsed_one(tmp_path):
    first = _probe(tmp_path)
    assert first["parsed"] and len(_files(tmp_path)) == 1
    second = _probe(tmp_path)
    assert not second["parsed"]          # read from the cache: registry.toml not parsed again
    assert {k: v for k, v in first.items() if k != "parsed"} == {k: v for k, v in second.items() if k != "parsed"}


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["truncated", "not json", "wrong types", "bad rule"])
def test_damaged_cache_is_parsed_again(tmp_path, damage):
    want = _probe(tmp_path)
    (f,) = _files(tmp_path)
    blob = json.loads(f.read_text())
    if damage == "truncated":
        f.write_text(f.read_text()[:100])
    elif damage == "not json":
        f.write_bytes(b"\\xff\\x00")
    elif damage == "wrong types":
        blob["gates"] = [[1, "x", None]]
        f.write_text(json.dumps(blob))
    else:
        blob["doc"]["rules"][0]["vendor"] = "nobody"
        f.write_text(json.dumps(blob))
    got = _probe(tmp_path)
    assert got["parsed"]
    assert {k: v for k, v in want.items() if k != "parsed"} == {k: v for k, v in got.items() if k != "parsed"}


def test_every_cached_gate_is_the_regexs_own(tmp_path, monkeypatch):
    """The required literals stored for the next process are those the parser reads from each
    pattern, under the flags the classifier compiles it with."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    text = Path(reg_mod.__file__).with_name("registry.toml").read_text()
    reg = reg_mod.parse_registry(reg_mod.read_toml(reg_mod.SHIPPED, text), reg_mod.SHIPPED, user=False)
    f = tmp_path / "reg.json"
    reg_mod._store_doc(f, {"rules": []}, reg)
    gates = json.loads(f.read_text())["gates"]
    assert gates
    for pattern, flags, lit in gates:
        rx = re.compile(pattern, flags & ~re.UNICODE)
        assert rx.flags == flags
        assert rm.required_literal(rx) == lit
    names = {(rx, rm.lazy_pattern(rx, rm.rule_flags(rx)).flags) for r in reg.rules for rx in r.regex if re.escape(rx) != rx}
    ops = {(rx, rm.lazy_pattern(rx, 0).flags) for r in reg.op_rules for rx in r.regex}
    assert {(p, f) for p, f, _ in gates} == names | ops


OP_NAMES = ["aten::mm", "aten::addmm", "aten::_cudnn_attention_forward", "aten::_flash_attention_forward",
            "aten::_scaled_dot_product_efficient_attention", "vllm::unified_attention_with_output",
            "aten::copy_", "aten::native_layer_norm", "_C::rms_norm", "_C::fused_add_rms_norm", "aten::bmm",
            "vllm::moe_forward", "_moe_C::topk_softmax", "aten::silu", "aten::gelu", "aten::nonsense",
            "sglang::foo", "c10d::allreduce_", "record_param_comms", "nccl:all_reduce", "ATEN::MM", ""]


def test_gated_operator_rules_read_as_every_regex_tried():
    """An operator rule's regex is skipped when the name lacks its required literal: the same
    rule as running every regex, on the shipped op-rule examples and more."""
    c = cl.Classifier.load()
    names = OP_NAMES + [e for r in c.op_rules for e in r.examples] + [e + "x" for r in c.op_rules for e in r.examples]
    for op in names:
        want = next((r for r in c.op_rules if op in r.ops or any(re.fullmatch(x, op) for x in r.regex)), None)
        assert c.op_rule(op) == want, op


def test_versions_sharing_a_cache_dir_keep_their_files_and_the_oldest_go(tmp_path):
    import os

    _probe(tmp_path)
    (f,) = _files(tmp_path)
    others = [f.with_name(f"shipped-{i:04}.json") for i in range(reg_mod.KEEP_VERSIONS)]
    for age, other in enumerate(others):          # others[0] the oldest
        other.write_bytes(f.read_bytes())
        os.utime(other, ns=(10**18 + age, 10**18 + age))
    f.unlink()
    _probe(tmp_path)                              # parses, writes f and drops the oldest other
    assert _files(tmp_path) == sorted([f] + others[1:])
    _probe(tmp_path)                              # found: nothing written, nothing dropped
    assert _files(tmp_path) == sorted([f] + others[1:])


def test_key_follows_the_registry_text():
    assert reg_mod._registry_key("a") != reg_mod._registry_key("b")
    assert reg_mod._registry_key("a") == reg_mod._registry_key("a")


def test_unwritable_cache_dir_still_loads(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))   # a file where the dir would go
    text = Path(reg_mod.__file__).with_name("registry.toml").read_text()
    reg = reg_mod.parse_registry(reg_mod.read_toml(reg_mod.SHIPPED, text), reg_mod.SHIPPED, user=False)
    reg_mod._store_doc(reg_mod.registry_cache_dir() / "x.json", {}, reg)   # best effort: no error
    assert blocker.is_file() and blocker.read_text() == "x"                 # and nothing written
    # a process that finds no usable cache dir parses registry.toml and reads it the same
    loaded = reg_mod.shipped_registry.__wrapped__()
    assert repr(loaded.rules) == repr(reg.rules) and repr(loaded.op_rules) == repr(reg.op_rules)
    assert list(tmp_path.iterdir()) == [blocker]
