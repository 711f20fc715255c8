"""DAP client whose operations become Kairox tools while a debug adapter runs."""
