"""Tests of kairox-process, the child-process library every feature uses (a package so that module names do not clash)."""
