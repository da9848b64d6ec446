/* page.c: placeholder */
#include <stddef.h>
const char srv_page_html[] = "<!doctype html><title>tern</title>";
const size_t srv_page_html_len = sizeof srv_page_html - 1;
