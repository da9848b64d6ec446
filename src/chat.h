/* chat.h: chat-template families recognised from tokenizer.chat_template (a Jinja string we do not
 * execute): the family is detected by its marker tokens and formatted by hand, as llama.cpp's
 * llm_chat_detect_template / llm_chat_apply_template do. */
#ifndef TERN_CHAT_H
#define TERN_CHAT_H
#include <stddef.h>

enum tern_chat_family {
    TERN_CHAT_UNKNOWN = -1,
    TERN_CHAT_CHATML = 0,   /* <|im_start|>role\ncontent<|im_end|>\n */
    TERN_CHAT_LLAMA3,       /* <|start_header_id|>role<|end_header_id|>\n\ncontent<|eot_id|> */
    TERN_CHAT_GEMMA,        /* <start_of_turn>user\ncontent<end_of_turn>\n (system folded into user) */
    TERN_CHAT_MISTRAL,      /* [INST] content [/INST] */
    TERN_CHAT_COUNT
};

typedef struct { const char *role; const char *content; } tern_chat_msg;

/* Family of a template string; TERN_CHAT_UNKNOWN if none matches (NULL tmpl -> UNKNOWN). */
enum tern_chat_family tern_chat_detect(const char *tmpl);
/* Family from its name ("chatml", "llama3", "gemma", "mistral"); UNKNOWN if not a name. */
enum tern_chat_family tern_chat_from_name(const char *name);
const char *tern_chat_name(enum tern_chat_family f);
/* Format msgs into buf (NUL-terminated). add_assistant: end with the assistant turn opener.
 * Returns the length needed (excluding NUL; may exceed cap: then truncated), -1 on unknown family.
 * The BOS token is not included (the tokenizer adds it per metadata). */
int tern_chat_format(enum tern_chat_family f, const tern_chat_msg *msgs, int n, int add_assistant,
                     char *buf, size_t cap);

#endif
