/* cli/synth.c: `tern synth` (issue 3). Not implemented yet: says so and exits 2. */
#include <stdio.h>

#include "commands.h"

int cmd_synth(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fputs("tern: error: 'synth' is not implemented yet\n", stderr);
    return 2;
}
