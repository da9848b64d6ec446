#!/usr/bin/env python3
"""Render real chat templates with Jinja2 and write the expected prompts that tests/test_chat.c
compares tern_chat_format against.

Usage (from the repo root; needs `pip install jinja2 gguf`, only for regenerating, the outputs are
committed):
    python3 tests/gen_chat_fixtures.py [--model models/SmolLM2-135M-Instruct.Q4_1.gguf]

Templates:
  chatml  : the SmolLM2-135M-Instruct template, read from the GGUF's tokenizer.chat_template.
  llama3  : Meta-Llama-3-8B-Instruct tokenizer_config.json chat_template.
  gemma   : gemma-3 (-it) tokenizer_config.json chat_template (the one that accepts a leading system
            message and folds it into the first user turn; gemma-2's raises on a system message).
  mistral : Mistral-Large-Instruct-2411 ("v7") tokenizer_config.json chat_template.
The three written-in templates are transcribed from the models' tokenizer_config.json files (their
JSON string values, decoded).

Rendering follows transformers' apply_chat_template: ImmutableSandboxedEnvironment with
trim_blocks and lstrip_blocks, a raise_exception global, bos_token/eos_token in the context. The BOS
token is stripped from the front of the render because tern's tokenizer adds it from metadata.

Outputs in tests/fixtures/chat/ (bytes exactly as rendered, UTF-8, no added newline):
  <family>.jinja          the template, used by the detection test
  <family>.sys.gen.txt    CONV_SYS,   add_generation_prompt=True
  <family>.sys.nogen.txt  CONV_SYS,   add_generation_prompt=False
  <family>.nosys.gen.txt  CONV_NOSYS, add_generation_prompt=True   (for chatml the SmolLM2 template
                          inserts its own default system prompt; tern finds it with
                          tern_chat_default_system and the test prepends it)
CONV_SYS / CONV_NOSYS must stay identical to the conversations in tests/test_chat.c.
"""
import argparse
import os
import sys

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment

# Keep in sync with tests/test_chat.c. The assistant turn has surrounding whitespace on purpose:
# Llama-3 and Gemma trim it, ChatML and Mistral keep it.
CONV_SYS = [
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "Hello! Grüße aus Zürich.\nWhat can you do?"},
    {"role": "assistant", "content": "  I can answer questions.\n"},
    {"role": "user", "content": "What is 2+2?"},
]
CONV_NOSYS = CONV_SYS[1:]

LLAMA3_TEMPLATE = (
    "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = "
    "'<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + "
    "'<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}"
    "{{ content }}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}"
)

GEMMA3_TEMPLATE = """{{ bos_token }}
{%- if messages[0]['role'] == 'system' -%}
    {%- if messages[0]['content'] is string -%}
        {%- set first_user_prefix = messages[0]['content'] + '

' -%}
    {%- else -%}
        {%- set first_user_prefix = messages[0]['content'][0]['text'] + '

' -%}
    {%- endif -%}
    {%- set loop_messages = messages[1:] -%}
{%- else -%}
    {%- set first_user_prefix = "" -%}
    {%- set loop_messages = messages -%}
{%- endif -%}
{%- for message in loop_messages -%}
    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}
        {{ raise_exception("Conversation roles must alternate user/assistant/user/assistant/...") }}
    {%- endif -%}
    {%- if (message['role'] == 'assistant') -%}
        {%- set role = "model" -%}
    {%- else -%}
        {%- set role = message['role'] -%}
    {%- endif -%}
    {{ '<start_of_turn>' + role + '
' + (first_user_prefix if loop.first else "") }}
    {%- if message['content'] is string -%}
        {{ message['content'] | trim }}
    {%- elif message['content'] is iterable -%}
        {%- for item in message['content'] -%}
            {%- if item['type'] == 'image' -%}
                {{ '<start_of_image>' }}
            {%- elif item['type'] == 'text' -%}
                {{ item['text'] | trim }}
            {%- endif -%}
        {%- endfor -%}
    {%- else -%}
        {{ raise_exception("Invalid content type") }}
    {%- endif -%}
    {{ '<end_of_turn>
' }}
{%- endfor -%}
{%- if add_generation_prompt -%}
    {{'<start_of_turn>model
'}}
{%- endif -%}
"""

MISTRAL_V7_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}{% if message['role'] == 'user' %}"
    "{{ '[INST] ' + message['content'] + '[/INST]' }}{% elif message['role'] == 'system' %}"
    "{{ '[SYSTEM_PROMPT] ' + message['content'] + '[/SYSTEM_PROMPT]' }}"
    "{% elif message['role'] == 'assistant' %}{{ ' ' + message['content'] + eos_token }}"
    "{% else %}{{ raise_exception('Only user, system and assistant roles are supported!') }}"
    "{% endif %}{% endfor %}"
)


def gguf_chat_template(path):
    from gguf import GGUFReader

    r = GGUFReader(path)
    f = r.fields["tokenizer.chat_template"]
    return bytes(f.parts[f.data[0]]).decode("utf-8")


def raise_exception(msg):
    raise jinja2.exceptions.TemplateError(msg)


def render(template, messages, add_generation_prompt, bos, eos):
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.globals["raise_exception"] = raise_exception
    out = env.from_string(template).render(
        messages=messages, add_generation_prompt=add_generation_prompt, bos_token=bos, eos_token=eos
    )
    if bos and out.startswith(bos):
        out = out[len(bos):]
    assert not bos or bos not in out, "BOS left inside the render"
    return out


# Phi-3: rendered by llama.cpp's own formatter (llama_chat_apply_template through llama-cpp-python 0.3.36, its
# "phi3" template: "<|role|>\ncontent<|end|>\n" a message, "<|assistant|>\n" to hand over), not by Jinja: the
# Phi-3 instruct templates on the hub differ between releases (system role, eos after the last turn), and llama.cpp's
# formatter is what llama-server applies to a Phi-3 GGUF. phi3.jinja is a template in that shape, for detection
# (llama.cpp detects it by "<|assistant|>" and "<|end|>").
PHI3_TEMPLATE = ("{% for message in messages %}{{ '<|' + message['role'] + '|>\n' + message['content'] + '<|end|>\n' }}"
                 "{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>\n' }}{% endif %}")


def llama_cpp_render(name, messages, add_generation_prompt):
    import ctypes
    import llama_cpp
    arr = (llama_cpp.llama_chat_message * len(messages))()
    keep = []
    for i, m in enumerate(messages):
        r, c = m["role"].encode(), m["content"].encode("utf-8")
        keep += [r, c]
        arr[i].role, arr[i].content = r, c
    buf = ctypes.create_string_buffer(1 << 16)
    n = llama_cpp.llama_chat_apply_template(name.encode(), arr, len(messages), add_generation_prompt, buf, len(buf))
    assert 0 < n < len(buf), n
    return buf.raw[:n].decode("utf-8")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=os.path.join(here, "..", "models", "SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--out", default=os.path.join(here, "fixtures", "chat"))
    ap.add_argument("--only", help="write this family's fixtures only")
    args = ap.parse_args()

    families = {
        # family: (template, bos_token, eos_token, render the no-system conversation too)
        # SmolLM2's bos_token is "<|im_start|>" (id 1) but its template never emits bos_token;
        # stripping a leading "<|im_start|>" would eat the first turn marker, so render with "".
        "chatml": (gguf_chat_template(args.model) if args.only in (None, "chatml") else "", "", "<|im_end|>", True),
        "llama3": (LLAMA3_TEMPLATE, "<|begin_of_text|>", "<|eot_id|>", True),
        "gemma": (GEMMA3_TEMPLATE, "<bos>", "<eos>", True),
        "mistral": (MISTRAL_V7_TEMPLATE, "<s>", "</s>", True),
    }
    os.makedirs(args.out, exist_ok=True)

    def write(name, text):
        with open(os.path.join(args.out, name), "w", encoding="utf-8", newline="") as f:
            f.write(text)
        print(f"wrote {name} ({len(text.encode('utf-8'))} bytes)")

    if args.only in (None, "phi3"):
        write("phi3.jinja", PHI3_TEMPLATE)
        write("phi3.sys.gen.txt", llama_cpp_render("phi3", CONV_SYS, True))
        write("phi3.sys.nogen.txt", llama_cpp_render("phi3", CONV_SYS, False))
        write("phi3.nosys.gen.txt", llama_cpp_render("phi3", CONV_NOSYS, True))
    for fam, (tmpl, bos, eos, nosys) in families.items():
        if args.only and fam != args.only:
            continue
        write(f"{fam}.jinja", tmpl)
        write(f"{fam}.sys.gen.txt", render(tmpl, CONV_SYS, True, bos, eos))
        write(f"{fam}.sys.nogen.txt", render(tmpl, CONV_SYS, False, bos, eos))
        if nosys:
            write(f"{fam}.nosys.gen.txt", render(tmpl, CONV_NOSYS, True, bos, eos))
    return 0


if __name__ == "__main__":
    sys.exit(main())
