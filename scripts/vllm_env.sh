#!/usr/bin/env bash
# Build (or reuse) the virtual environment the vLLM plugin's tests run in.
#
#   bash scripts/vllm_env.sh            # creates .venv-vllm, prints its python
#   REASONSPAN_VLLM_VENV=~/.cache/reasonspan/venv-vllm bash scripts/vllm_env.sh
#
# vLLM is installed with --no-deps: its own requirements pin a CUDA torch and GPU kernels
# (flashinfer, triton, ...), several GB that a CPU machine cannot use and the parser modules
# never import. Instead: the CPU torch wheel this machine ships on disk (vLLM 0.34 asks for
# torch 2.14.0; the 2.13.0 CPU build serves the parser modules, which only import torch
# through vllm.config), and the pure-Python packages that `import vllm.reasoning`,
# `vllm.tool_parsers`, `vllm.parser.parser_manager` and every built-in parser they register
# (93 modules in 0.34) need, found by importing them and adding what was missing (the list
# below, nothing more; the check at the end imports them all again). reasonspan itself goes in
# editable, with what its tests need.
#
# Cached: the environment is reused while its stamp (this file's hash) matches; only the
# editable install of the current checkout is redone (a few seconds), so a venv kept
# outside the clone (REASONSPAN_VLLM_VENV) serves every clone of the machine.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
venv=${REASONSPAN_VLLM_VENV:-$root/.venv-vllm}
VLLM_VERSION=0.34.0
TORCH_WHEEL=${REASONSPAN_TORCH_WHEEL:-/opt/wheels/torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl}
# What the parser modules import, beyond torch and vLLM (xgrammar goes in without its
# dependencies: they would pull triton; apache-tvm-ffi is the one it needs to import).
PARSER_DEPS=(
    "setuptools>=77" typing_extensions sympy networkx jinja2 filelock fsspec numpy
    packaging regex "openai>=2.25" "pydantic>=2.12" psutil "pyzmq>=25" "transformers>=5.16.1,<5.23"
    "tokenizers>=0.23.3" "safetensors>=0.8" aiohttp requests "fastapi>=0.133,<0.137" pillow
    pybase64 cachetools prometheus_client "oss-harmony>=0.0.11" cbor2 msgspec cloudpickle
    uvloop py-cpuinfo partial-json-parser apache-tvm-ffi ijson "mistral_common>=1.13"
)
NO_DEPS=("vllm==$VLLM_VERSION" "xgrammar==0.2.8")
TEST_DEPS=(pytest hypothesis)
# What vLLM's own parser tests import beyond its parsers (scripts/vllm_upstream_tests.sh),
# and what reading its source distribution's metadata without compiling it needs.
UPSTREAM_DEPS=("llguidance>=1.7,<1.8" einops setuptools-rust setuptools-scm)

# pip's complaints about vLLM's unmet (GPU) requirements, and this machine's empty local
# index folders, are expected: filter them, keep every other line.
quiet() { grep -v "requires\|resolver\|incompatible\|is ignored: it is neither" || true; }

stamp=$(sha256sum "$0" | cut -c1-16)
if [ -x "$venv/bin/python" ] && [ "$(cat "$venv/.reasonspan-stamp" 2>/dev/null)" = "$stamp" ]; then
    echo "vllm env: reusing $venv" >&2
else
    echo "vllm env: building $venv (vLLM $VLLM_VERSION, CPU torch)" >&2
    rm -rf "$venv"
    python3 -m venv "$venv"
    pip=("$venv/bin/python" -m pip install --quiet --disable-pip-version-check)
    "${pip[@]}" --no-deps "$TORCH_WHEEL" "${NO_DEPS[@]}" 2> >(quiet >&2)
    "${pip[@]}" "${PARSER_DEPS[@]}" "${TEST_DEPS[@]}" "${UPSTREAM_DEPS[@]}" 2> >(quiet >&2)
    echo "$stamp" >"$venv/.reasonspan-stamp"
fi
# The checkout under test, with the plugin's entry point (and the demo extra: the
# offline tokenizers the tests use).
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -e "$root[demo]" \
    2> >(quiet >&2)
"$venv/bin/python" - <<'EOF' || { echo "vllm env: vLLM's parser modules do not import" >&2; exit 1; }
import importlib
import vllm.parser.parser_manager
from vllm.reasoning import ReasoningParserManager as R
from vllm.tool_parsers import ToolParserManager as T
for module in sorted({m for m, _ in [*R.lazy_parsers.values(), *T.lazy_parsers.values()]}):
    importlib.import_module(module)
EOF
echo "$venv/bin/python"
