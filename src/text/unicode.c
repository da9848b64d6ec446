/* unicode.c: UTF-8 helpers, category lookup over the generated range table, GPT-2 byte map.
 * Sources: RFC 3629 (UTF-8), UAX #44 / PropList.txt (categories, White_Space), openai/gpt-2
 * encoder.py (bytes_to_unicode); error handling follows llama.cpp src/text/unicode.cpp so that token ids
 * agree on odd input. */
#include "unicode.h"

int tern_uc_class_of(uint32_t cp) {
    if (cp > 0x10FFFF) return TERN_UC_UNDEFINED;
    /* binary search: last range whose start <= cp */
    int lo = 0, hi = tern_uc_n_ranges - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) >> 1;
        if (tern_uc_start[mid] <= cp) lo = mid; else hi = mid - 1;
    }
    return tern_uc_class[lo];
}

int tern_uc_is_space(uint32_t cp) {
    if (cp <= 0x20) return cp == 0x20 || (cp >= 0x09 && cp <= 0x0D);
    switch (cp) {
    case 0x85: case 0xA0: case 0x1680: case 0x2028: case 0x2029: case 0x202F: case 0x205F: case 0x3000:
        return 1;
    default:
        return cp >= 0x2000 && cp <= 0x200A;
    }
}

uint32_t tern_utf8_decode(const unsigned char *s, size_t n, int *adv) {
    unsigned char c = s[0];
    *adv = 1;
    if (c < 0x80) return c;
    if ((c & 0x40) == 0) return 0xFFFD;  /* stray continuation byte */
    int len = (c & 0x20) == 0 ? 2 : (c & 0x10) == 0 ? 3 : (c & 0x08) == 0 ? 4 : 0;
    if (len == 0 || (size_t)len > n) return 0xFFFD;
    for (int i = 1; i < len; i++)
        if ((s[i] & 0xC0) != 0x80) return 0xFFFD;
    uint32_t cp = len == 2 ? (c & 0x1Fu) : len == 3 ? (c & 0x0Fu) : (c & 0x07u);
    for (int i = 1; i < len; i++) cp = (cp << 6) | (s[i] & 0x3Fu);
    *adv = len;
    return cp;
}

int tern_utf8_encode(uint32_t cp, char *out) {
    if (cp < 0x80) { out[0] = (char)cp; return 1; }
    if (cp < 0x800) { out[0] = (char)(0xC0 | (cp >> 6)); out[1] = (char)(0x80 | (cp & 0x3F)); return 2; }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12)); out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | ((cp >> 18) & 0x07)); out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F)); out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

static int gpt2_printable(int b) { return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE); }

uint32_t tern_gpt2_byte_to_cp(uint8_t b) {
    if (gpt2_printable(b)) return b;
    int n = 0;  /* rank of b among the non-printable bytes */
    for (int i = 0; i < b; i++) n += !gpt2_printable(i);
    return 256u + (uint32_t)n;
}

int tern_gpt2_cp_to_byte(uint32_t cp) {
    if (cp < 256) return gpt2_printable((int)cp) ? (int)cp : -1;
    if (cp >= 256 + 68) return -1;
    int n = (int)(cp - 256);
    for (int b = 0; b < 256; b++)
        if (!gpt2_printable(b) && n-- == 0) return b;
    return -1;
}
