/* tensio — main(). The tool is tensio_run() (tensio.c), kept out of main so
 * that tests link the commands as a library (tensio_cli_lib). */
#include "cli.h"

int main(int argc, char **argv) { return tensio_run(argc, argv); }
