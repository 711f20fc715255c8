"""kairox-serve."""
