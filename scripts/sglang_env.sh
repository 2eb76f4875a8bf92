#!/usr/bin/env bash
# Build (or reuse) the virtual environment the SGLang adapter's tests run in.
#
#   bash scripts/sglang_env.sh          # builds ~/.cache/reasonspan/venv-sglang, prints its python
#   REASONSPAN_SGLANG_VENV=/some/dir bash scripts/sglang_env.sh
#
# SGLang's pins conflict with vLLM's (transformers, openai, xgrammar, torch), hence an
# environment of its own. SGLang goes in with --no-deps: its requirements are CUDA torch and
# GPU kernels (flashinfer, sglang-kernel, deep-gemm, cutlass, ...), many GB a CPU machine
# cannot use. What its parser modules need was found by importing them
# (`sglang.srt.parser.reasoning_parser`, `sglang.srt.function_call.function_call_parser`,
# `sglang.srt.plugins`) and mapping every module they load to its distribution:
#
# - torch: `import sglang` imports sglang.srt.utils.common, which imports torch at the top;
#   the CPU wheel this machine ships on disk serves (SGLang asks for 2.14.1; the parser
#   modules only import it). Installed --no-deps, with the few packages its import needs.
# - triton, --no-deps (the real package, about 1 GB unpacked): the same module imports it at
#   the top. No stub: torch finds triton installed and reads triton.language at import, so
#   an empty module breaks torch itself.
# - xgrammar 0.2.7 (SGLang's pin), --no-deps (its dependencies pull GPU packages);
#   apache-tvm-ffi is the one it needs to import. The function-call base detector imports it.
# - the rest are pure-Python (or plain wheels) that those modules import at the top:
#   transformers (SGLang's pin, with tokenizers), pydantic, orjson, partial_json_parser,
#   openai (SGLang's pin; its protocol models), aiohttp, IPython, pillow, psutil, pybase64,
#   pyzmq, msgspec, requests, starlette, jinja2.
# reasonspan goes in editable (the checkout this script runs in) with its demo extra (the
# offline tokenizers the tests use), and pytest.
#
# Cached: the environment is reused while its stamp (this file's hash) matches; only the
# editable install of the current checkout is redone (a few seconds), so a venv kept
# outside the clone serves every clone of the machine.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
venv=${REASONSPAN_SGLANG_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/reasonspan/venv-sglang}
SGLANG_VERSION=0.5.23
TORCH_WHEEL=${REASONSPAN_TORCH_WHEEL:-/opt/wheels/torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl}
NO_DEPS=("sglang==$SGLANG_VERSION" "xgrammar==0.2.7" "triton==3.9.0")
# torch's own imports (it went in without dependencies).
TORCH_DEPS=(typing_extensions sympy filelock setuptools)
PARSER_DEPS=(
    "transformers==5.19.0" "tokenizers==0.23.2" "apache-tvm-ffi==0.1.11" "openai==2.8.0"
    pydantic orjson partial_json_parser aiohttp ipython pillow psutil pybase64 "pyzmq>=25.1.2"
    msgspec requests starlette jinja2
)
TEST_DEPS=(pytest pytest-asyncio)

# pip's complaints about SGLang's unmet (GPU) requirements, and this machine's empty local
# index folders, are expected: filter them, keep every other line.
quiet() { grep -v "requires\|resolver\|incompatible\|is ignored: it is neither" || true; }

stamp=$(sha256sum "$0" | cut -c1-16)
if [ -x "$venv/bin/python" ] && [ "$(cat "$venv/.reasonspan-stamp" 2>/dev/null)" = "$stamp" ]; then
    echo "sglang env: reusing $venv" >&2
else
    echo "sglang env: building $venv (SGLang $SGLANG_VERSION, CPU torch)" >&2
    rm -rf "$venv"
    mkdir -p "$(dirname "$venv")"
    python3 -m venv "$venv"
    pip=("$venv/bin/python" -m pip install --quiet --disable-pip-version-check)
    "${pip[@]}" --no-deps "$TORCH_WHEEL" "${NO_DEPS[@]}" 2> >(quiet >&2)
    "${pip[@]}" "${TORCH_DEPS[@]}" "${PARSER_DEPS[@]}" "${TEST_DEPS[@]}" 2> >(quiet >&2)
    # Checked once, when built (the import costs about 9 s): the modules the adapter uses.
    "$venv/bin/python" - <<'EOF' || { echo "sglang env: SGLang's parser modules do not import" >&2; exit 1; }
import sglang.srt.function_call.function_call_parser
import sglang.srt.parser.reasoning_parser
import sglang.srt.plugins
EOF
    echo "$stamp" >"$venv/.reasonspan-stamp"
fi
# The checkout under test, with the adapter's entry point (and the demo extra: the offline
# tokenizers the tests use).
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -e "$root[demo]" \
    2> >(quiet >&2)
echo "$venv/bin/python"
