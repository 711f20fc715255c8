"""Filesystem skill sources: kairox skill files and Agent Skills folders."""
