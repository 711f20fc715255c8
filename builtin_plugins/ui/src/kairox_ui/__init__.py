"""kairox-ui."""
