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
    TERN_CHAT_MISTRAL,      /* Mistral v7: [SYSTEM_PROMPT] sys[/SYSTEM_PROMPT][INST] user[/INST] asst</s> */
    TERN_CHAT_PHI3,         /* <|role|>\ncontent<|end|>\n, <|assistant|>\n to hand over (llama.cpp's phi3) */
    TERN_CHAT_COUNT
};

typedef struct { const char *role; const char *content; } tern_chat_msg;

/* Family of a template string; TERN_CHAT_UNKNOWN if none matches (NULL tmpl -> UNKNOWN).
 * A family name (as tern_chat_from_name) is accepted too, so an override can go through here.
 * Markers, checked in this order: "<|im_start|>" ChatML (but not with "<|im_sep|>" (Phi-4) or
 * "<end_of_utterance>" (SmolVLM)); "<|start_header_id|>" and "<|end_header_id|>" Llama-3;
 * "<start_of_turn>" Gemma; "[INST]" Mistral (but not with "<<SYS>>", which is Llama-2). */
enum tern_chat_family tern_chat_detect(const char *tmpl);
/* Family from its name ("chatml", "llama3", "gemma", "mistral"); UNKNOWN if not a name. */
enum tern_chat_family tern_chat_from_name(const char *name);
const char *tern_chat_name(enum tern_chat_family f);
/* Format msgs into buf (NUL-terminated). add_assistant: end with the assistant turn opener.
 * Returns the length needed (excluding NUL; may exceed cap: then truncated), -1 on unknown family.
 * The BOS token is not included (the tokenizer adds it per metadata). buf may be NULL when cap is 0
 * (size query). -1 (with tern_last_error) also for n < 0, NULL msgs, a NULL role or content.
 * Per family (as llama.cpp's llm_chat_apply_template):
 *   ChatML : "<|im_start|>{role}\n{content}<|im_end|>\n" ... opener "<|im_start|>assistant\n".
 *   Llama-3: "<|start_header_id|>{role}<|end_header_id|>\n\n{trim(content)}<|eot_id|>" ...
 *            opener "<|start_header_id|>assistant<|end_header_id|>\n\n".
 *   Gemma  : system messages folded (trimmed, + "\n\n") into the next user turn; "assistant" ->
 *            "model"; "<start_of_turn>{role}\n{trim(content)}<end_of_turn>\n"; opener
 *            "<start_of_turn>model\n".
 *   Mistral: v7 (Mistral-Large-Instruct-2411): "[SYSTEM_PROMPT] {c}[/SYSTEM_PROMPT]", "[INST] {c}[/INST]",
 *            other roles " {c}</s>"; no opener (add_assistant is ignored). Older v1/v3 templates are
 *            detected as this family and differ in spaces around [INST]/[/INST] (see chat.c).
 * Roles are passed through as given (ChatML, Llama-3, Gemma user turns). */
int tern_chat_format(enum tern_chat_family f, const tern_chat_msg *msgs, int n, int add_assistant,
                     char *buf, size_t cap);

/* The default system message a template inserts when the conversation has none, found as a string
 * literal "<|im_start|>system\n...<|im_end|>" inside a ChatML template (SmolLM2's does this). Copies it
 * NUL-terminated into buf and returns its length, or -1 if the template has none (or cap is too small). */
int tern_chat_default_system(const char *tmpl, char *buf, size_t cap);

#endif
