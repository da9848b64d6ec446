/* cli/bench.c: `tern bench` (issue 3). Not implemented yet: says so and exits 2. */
#include <stdio.h>

#include "commands.h"

int cmd_bench(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fputs("tern: error: 'bench' is not implemented yet\n", stderr);
    return 2;
}
