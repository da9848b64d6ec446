/* tokenizer.h: tokenizers built from GGUF metadata (tokenizer.ggml.*), matching llama.cpp's ids.
 *
 *  - "gpt2": byte-level BPE (GPT-2 byte-to-unicode map, merges by rank) with the pre-tokenizer regex
 *    of the tokenizer.ggml.pre family (PCRE2 over a class-collapsed text as llama.cpp does, classes
 *    from src/text/unicode_data.c at llama.cpp's Unicode 15.1);
 *  - "llama": SentencePiece-style BPE over scores with byte fallback (<0xXX> tokens), space -> U+2581.
 * Special tokens are cut out of the text before either: CONTROL ones when parse_special, USER_DEFINED
 * ones always (as llama.cpp does; e.g. Gemma-3's "\n\n" tokens).
 */
#ifndef TERN_TOKENIZER_H
#define TERN_TOKENIZER_H
#include <stddef.h>
#include <stdint.h>
#include "gguf.h"

typedef struct tern_vocab tern_vocab;

/* Build the vocabulary from the tokenizer.ggml.* metadata of f (the file may be closed afterwards:
 * everything is copied). NULL on error (unknown tokenizer model or pre-tokenizer, missing arrays). */
tern_vocab *tern_vocab_load(const gguf_file *f);
/* As tern_vocab_load, but with tokenizer.ggml.pre taken as `pre` (NULL: the file's). Lets tests run
 * one vocabulary under every pre-tokenizer family. */
tern_vocab *tern_vocab_load_pre(const gguf_file *f, const char *pre);
void tern_vocab_free(tern_vocab *v);

int32_t tern_vocab_n_tokens(const tern_vocab *v);
int32_t tern_vocab_bos(const tern_vocab *v);  /* -1 if none */
int32_t tern_vocab_eos(const tern_vocab *v);  /* -1 if none */
/* tokenizer.ggml.add_bos_token (defaults as llama.cpp: true for "llama", false for "gpt2"). */
int tern_vocab_add_bos(const tern_vocab *v);
/* 1 if id ends generation: EOS, EOT, EOM and the end tokens llama.cpp recognises by text
 * (<|im_end|>, <|eot_id|>, <end_of_turn>, <|endoftext|> ...). */
int tern_vocab_is_eog(const tern_vocab *v, int32_t id);
/* 1 if id is a control token (hidden when detokenizing for display). */
int tern_vocab_is_control(const tern_vocab *v, int32_t id);
/* Token id of an exact token text, or -1. */
int32_t tern_vocab_find(const tern_vocab *v, const char *text);

/* Tokenize len bytes of UTF-8 text. add_bos: prepend BOS (if the vocab has one; pass
 * tern_vocab_add_bos(v) for llama.cpp's add_special). parse_special: match control token texts in
 * the input as single tokens (llama.cpp's `special`; user-defined tokens are matched either way).
 * Writes up to max ids; returns the number of ids (which may exceed max: then call again with a larger
 * buffer), or -1 on error. */
int tern_tokenize(const tern_vocab *v, const char *text, size_t len, int add_bos, int parse_special,
                  int32_t *out, int max);

/* As tern_tokenize; *n_dropped (may be NULL) gets the number of input bytes no token encodes: a byte-level BPE
 * vocabulary without all 256 byte tokens (SmolLM2 has no token for 0x04, 0x06, 0x13, 0x14, 0x16, 0x1D, 0xF1,
 * 0xF2, ...) drops them, as llama.cpp does; SentencePiece without a byte token gives UNK for them. */
int tern_tokenize_ex(const tern_vocab *v, const char *text, size_t len, int add_bos, int parse_special,
                     int32_t *out, int max, size_t *n_dropped);

/* The bytes of token id (byte-level BPE decoded, U+2581 -> space, <0xXX> -> byte). Control tokens give
 * "" unless show_special. Returns the number of bytes (may exceed buflen: then truncated), -1 if id is
 * out of range. */
int tern_token_to_piece(const tern_vocab *v, int32_t id, char *buf, int buflen, int show_special);

/* Detokenize a sequence (concatenated pieces; control tokens hidden unless show_special). Returns the
 * byte count (may exceed buflen: then truncated). */
int tern_detokenize(const tern_vocab *v, const int32_t *ids, int n, char *buf, int buflen, int show_special);

/* Streaming UTF-8 guard: feed pieces, get back only complete UTF-8 sequences so a character split
 * across tokens is never printed half. */
typedef struct { char pending[8]; int n_pending; } tern_utf8_stream;
/* Append in[0..n) to the stream; writes complete sequences to out (capacity >= 3 * (n + 8)) and returns
 * their byte count; an incomplete trailing sequence stays pending. Invalid UTF-8 (stray continuation bytes,
 * overlong forms, surrogates, past U+10FFFF) becomes U+FFFD, one per maximal invalid prefix (Unicode 15
 * sec. 3.9, "U+FFFD substitution of maximal subparts"), so the output is always valid UTF-8. */
int tern_utf8_stream_push(tern_utf8_stream *s, const char *in, int n, char *out);
/* Length of the longest prefix of text[0..n) that is valid UTF-8 (the stream's rules): n when all of it is. */
size_t tern_utf8_valid_prefix(const char *text, size_t n);

#endif
