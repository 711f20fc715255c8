"""Tests of kairox-testing, the pytest plugin and strategies for plugin authors (a package so that module names do not clash)."""
