/* fuzz_tokenizer: libFuzzer over the tokenizer (issue 28): bytes -> ids -> bytes with SmolLM2's byte-level BPE
 * vocabulary (the default model; $TERN_MODEL overrides). The first input byte chooses special-token parsing and BOS;
 * the rest is the text. Every id must be in range; without special parsing, for valid UTF-8 with no byte the
 * vocabulary cannot encode (tern_tokenize_ex's count), detokenizing gives the text back byte for byte (SmolLM2 does
 * no clean-up of spaces); the UTF-8 stream over the pieces always writes valid UTF-8. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf.h"
#include "tern.h"
#include "tokenizer.h"

static tern_vocab *vocab;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc; (void)argv;
    const char *p = getenv("TERN_MODEL");
    gguf_file *f = gguf_open(p && *p ? p : "models/SmolLM2-135M-Instruct.Q4_1.gguf");
    vocab = f ? tern_vocab_load(f) : NULL;
    if (!vocab) { fprintf(stderr, "fuzz_tokenizer: %s\n", tern_last_error()); exit(1); }
    gguf_close(f);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    if (n < 1 || n > 4096) return 0;
    const int special = data[0] & 1, bos = (data[0] >> 1) & 1;
    const char *text = (const char *)data + 1;
    const size_t len = n - 1;
    size_t dropped = 0;
    int32_t ids[8192];
    const int k = tern_tokenize_ex(vocab, text, len, bos, special, ids, 8192, &dropped);
    if (k < 0 || k > 8192) abort();
    const int32_t nv = tern_vocab_n_tokens(vocab);
    for (int i = 0; i < k; i++)
        if (ids[i] < 0 || ids[i] >= nv) abort();
    if (!special && !bos && dropped == 0 && tern_utf8_valid_prefix(text, len) == len) {
        static char back[65536];
        const int m = tern_detokenize(vocab, ids, k, back, sizeof back, 1);
        if (m != (int)len || memcmp(back, text, len) != 0) {
            fprintf(stderr, "fuzz_tokenizer: round trip of %zu bytes gave %d bytes\n", len, m);
            abort();
        }
    }
    /* the stream of pieces: valid UTF-8 out, whatever the pieces */
    tern_utf8_stream us = {{0}, 0};
    for (int i = 0; i < k; i++) {
        char piece[256], out[3 * (256 + 8)];
        int np = tern_token_to_piece(vocab, ids[i], piece, sizeof piece, 1);
        if (np < 0 || np > (int)sizeof piece) continue;
        int w = tern_utf8_stream_push(&us, piece, np, out);
        if (tern_utf8_valid_prefix(out, (size_t)w) != (size_t)w) abort();
    }
    return 0;
}
