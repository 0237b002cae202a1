"""A scenario file that calls sys.exit(0) at import."""

import sys

sys.exit(0)
