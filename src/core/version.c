#include "internal.h"

unsigned tio_version_number(void) { return TIO_VERSION_NUMBER; }
const char *tio_version_string(void) { return TIO_VERSION_STRING; }
