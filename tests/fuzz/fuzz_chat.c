/* fuzz_chat: libFuzzer over the chat-template renderer (issue 28): the input's first byte picks the family, the rest
 * is cut at 0x1F into messages whose roles cycle through system/user/assistant/tool/other; each rendering asks the
 * size first, then renders into exactly that much and into less (never written past cap, always NUL-terminated,
 * the same prefix). The input as a template text goes through tern_chat_detect and tern_chat_default_system. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    if (n < 1 || n > 8192) return 0;
    char *text = malloc(n);
    memcpy(text, data + 1, n - 1);
    text[n - 1] = 0;
    (void)tern_chat_detect(text);
    char sys[256];
    int k = tern_chat_default_system(text, sys, sizeof sys);
    if (k > 0 && (size_t)k < sizeof sys && strlen(sys) != (size_t)k) abort();
    static const char *roles[] = {"system", "user", "assistant", "tool", "other"};
    tern_chat_msg msgs[64];
    int nm = 0;
    for (char *p = text, *end = text + strlen(text); p <= end && nm < 64;) {
        char *q = memchr(p, 0x1F, (size_t)(end - p));
        if (q) *q = 0;
        msgs[nm] = (tern_chat_msg){roles[nm % 5], p};
        nm++;
        if (!q) break;
        p = q + 1;
    }
    const enum tern_chat_family fam = (enum tern_chat_family)(data[0] % TERN_CHAT_COUNT);
    for (int add = 0; add < 2; add++) {
        const int need = tern_chat_format(fam, msgs, nm, add, NULL, 0);
        if (need < 0) continue;
        char *full = malloc((size_t)need + 1);
        if (tern_chat_format(fam, msgs, nm, add, full, (size_t)need + 1) != need || strlen(full) != (size_t)need) abort();
        const size_t cap = (size_t)need / 2 + 1;
        char *part = malloc(cap + 16);
        memset(part, 0x5A, cap + 16);
        (void)tern_chat_format(fam, msgs, nm, add, part, cap);
        for (size_t i = cap; i < cap + 16; i++)
            if ((unsigned char)part[i] != 0x5A) abort(); /* written past cap */
        if (memchr(part, 0, cap) == NULL || strncmp(part, full, strlen(part)) != 0) abort();
        free(part);
        free(full);
    }
    free(text);
    return 0;
}
