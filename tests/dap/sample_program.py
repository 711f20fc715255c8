"""A program the DAP tests debug (line numbers are used by tests/dap/test_debugpy.py)."""

import sys


def accumulate(values: list[int]) -> int:
    total = 0
    for index, value in enumerate(values):
        total += value * (index + 1)
    return total


def main() -> int:
    values = [int(v) for v in sys.argv[1:]] or [1, 2, 3, 4]
    result = accumulate(values)
    print(f"total={result}")
    return result


if __name__ == "__main__":
    main()
