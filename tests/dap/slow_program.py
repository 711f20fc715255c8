"""A program that runs for a while before it reaches line 9 (tests/dap/test_debugpy.py)."""

import time

time.sleep(1.5)
print("woke up", flush=True)


value = 41 + 1
print(value)
