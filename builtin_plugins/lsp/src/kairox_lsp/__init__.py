"""LSP client whose operations become Kairox tools while a server runs."""
