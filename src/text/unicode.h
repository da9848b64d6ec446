/* unicode.h: the little Unicode the tokenizer needs: UTF-8 decode/encode with llama.cpp's error
 * handling, the general-category class of a code point (Unicode 15.1, as llama.cpp's tables), the
 * White_Space property, and GPT-2's byte <-> printable-code-point map. */
#ifndef TERN_UNICODE_H
#define TERN_UNICODE_H
#include <stddef.h>
#include <stdint.h>

/* Category classes: the first letter of the general category (UAX #44). The bit values are the ones
 * llama.cpp's unicode_cpt_flags uses, so a table dump of either can be compared directly. */
enum {
    TERN_UC_UNDEFINED = 0x01, /* Cn: unassigned / noncharacter */
    TERN_UC_NUMBER = 0x02,    /* N* */
    TERN_UC_LETTER = 0x04,    /* L* */
    TERN_UC_SEPARATOR = 0x08, /* Z* */
    TERN_UC_MARK = 0x10,      /* M* */
    TERN_UC_PUNCT = 0x20,     /* P* */
    TERN_UC_SYMBOL = 0x40,    /* S* */
    TERN_UC_CONTROL = 0x80,   /* Cc Cf Cs Co */
};

/* Generated range table (src/text/unicode_data.c): class of [start[i], start[i+1]). */
extern const int tern_uc_n_ranges;
extern const uint32_t tern_uc_start[];
extern const uint8_t tern_uc_class[];

/* Class of code point cp (one TERN_UC_* value); cp > U+10FFFF gives TERN_UC_UNDEFINED. */
int tern_uc_class_of(uint32_t cp);
/* 1 if cp has the White_Space property (PropList.txt: 25 code points, incl. U+0085 and U+00A0). */
int tern_uc_is_space(uint32_t cp);

/* Byte length of the UTF-8 sequence a lead byte announces, from its high nibble (1 for continuation
 * and invalid bytes), like llama.cpp's unicode_len_utf8. */
static inline int tern_utf8_len(unsigned char lead) {
    static const unsigned char lookup[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return lookup[lead >> 4];
}
/* Decode one code point at s[0..n) (n >= 1); *adv gets the bytes consumed. A malformed or truncated
 * sequence gives U+FFFD and consumes one byte (llama.cpp's unicode_cpts_from_utf8). Overlong forms
 * are accepted as llama.cpp does. */
uint32_t tern_utf8_decode(const unsigned char *s, size_t n, int *adv);
/* Encode cp (<= U+10FFFF) into out (4 bytes room); returns the byte count. */
int tern_utf8_encode(uint32_t cp, char *out);

/* GPT-2 byte-level map (openai/gpt-2 encoder.py bytes_to_unicode): byte b -> code point. Printable
 * bytes '!'..'~', 0xA1..0xAC, 0xAE..0xFF map to themselves; the other 68 bytes, in order, to
 * U+0100, U+0101, ... */
uint32_t tern_gpt2_byte_to_cp(uint8_t b);
/* Inverse: byte for code point cp, or -1 if cp is not in the map's image. */
int tern_gpt2_cp_to_byte(uint32_t cp);

#endif
