"""Create a skill folder from the template."""

import sys

print("init", sys.argv[1:])
